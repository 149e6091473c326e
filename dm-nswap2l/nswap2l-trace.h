/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints of the slot map's life: what was written, read, freed and
 * migrated, slot by slot run. `perf record -e 'nswap2l:*'`, trace-cmd or
 * bpftrace record them; userspace/sim replays such a trace against every
 * prefetch policy.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM nswap2l

#if !defined(_TRACE_NSWAP2L_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_NSWAP2L_H

#include <linux/tracepoint.h>

#define show_n2l_medium(m)						\
	__print_symbolic(m, { 0, "none" }, { 1, "netram" },		\
			 { 2, "flash" }, { 3, "disk" })

DECLARE_EVENT_CLASS(nswap2l_slots,
	TP_PROTO(dev_t dev, u32 slot, u32 nr, u8 medium),
	TP_ARGS(dev, slot, nr, medium),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(u32, slot)
		__field(u32, nr)
		__field(u8, medium)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->slot = slot;
		__entry->nr = nr;
		__entry->medium = medium;
	),
	TP_printk("dev=%d:%d slot=%u nr=%u medium=%s",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->slot,
		  __entry->nr, show_n2l_medium(__entry->medium))
);

/* A write (swap-out) of nr slots from slot is mapped to medium. */
DEFINE_EVENT(nswap2l_slots, nswap2l_write,
	TP_PROTO(dev_t dev, u32 slot, u32 nr, u8 medium),
	TP_ARGS(dev, slot, nr, medium)
);

/* A read (swap-in) of nr slots from slot is sent to medium. */
DEFINE_EVENT(nswap2l_slots, nswap2l_read,
	TP_PROTO(dev_t dev, u32 slot, u32 nr, u8 medium),
	TP_ARGS(dev, slot, nr, medium)
);

/* nr slots from slot are discarded (medium: none). */
DEFINE_EVENT(nswap2l_slots, nswap2l_free,
	TP_PROTO(dev_t dev, u32 slot, u32 nr, u8 medium),
	TP_ARGS(dev, slot, nr, medium)
);

/* moved of nr slots from slot went from one medium to another. */
TRACE_EVENT(nswap2l_migrate,
	TP_PROTO(dev_t dev, u32 slot, u32 nr, u32 moved, u8 from, u8 to),
	TP_ARGS(dev, slot, nr, moved, from, to),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(u32, slot)
		__field(u32, nr)
		__field(u32, moved)
		__field(u8, from)
		__field(u8, to)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->slot = slot;
		__entry->nr = nr;
		__entry->moved = moved;
		__entry->from = from;
		__entry->to = to;
	),
	TP_printk("dev=%d:%d slot=%u nr=%u moved=%u from=%s to=%s",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->slot,
		  __entry->nr, __entry->moved, show_n2l_medium(__entry->from),
		  show_n2l_medium(__entry->to))
);

#endif /* _TRACE_NSWAP2L_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE nswap2l-trace
#include <trace/define_trace.h>
