/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints of the slot map's life: what was written, read, freed and
 * migrated, slot by slot run; and each prefetch plan, with what it saw. `perf record -e 'nswap2l:*'`, trace-cmd or
 * bpftrace record them; userspace/sim replays such a trace against every
 * prefetch policy.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM nswap2l

#if !defined(_TRACE_NSWAP2L_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_NSWAP2L_H

#include <linux/tracepoint.h>

#include "n2l-policy.h"

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

/*
 * A prefetch policy's plan at an activation: what the engine measured
 * since the last one (swap-outs, free slots, mean read latencies in us
 * over the reads completed meanwhile, 0 without any, reads in flight,
 * the CPUs' idle share in per mille), and what the policy asked for,
 * target slots of which room to make room on Network RAM.
 */
TRACE_EVENT(nswap2l_prefetch_plan,
	TP_PROTO(dev_t dev, const struct n2l_pf_view *v, u64 target, u64 room),
	TP_ARGS(dev, v, target, room),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(u64, swapouts)
		__field(u32, net_free)
		__field(u32, flash_free)
		__field(u64, net_us)
		__field(u64, flash_us)
		__field(u32, net_qd)
		__field(u32, flash_qd)
		__field(u32, idle_pm)
		__field(u64, target)
		__field(u64, room)
	),
	TP_fast_assign(
		__entry->dev = dev;
		__entry->swapouts = v->swapouts;
		__entry->net_free = v->free[N2L_NETRAM];
		__entry->flash_free = v->free[N2L_FLASH];
		__entry->net_us = v->reads[N2L_NETRAM] ?
			div64_u64(v->read_us[N2L_NETRAM], v->reads[N2L_NETRAM]) : 0;
		__entry->flash_us = v->reads[N2L_FLASH] ?
			div64_u64(v->read_us[N2L_FLASH], v->reads[N2L_FLASH]) : 0;
		__entry->net_qd = v->reads_inflight[N2L_NETRAM];
		__entry->flash_qd = v->reads_inflight[N2L_FLASH];
		__entry->idle_pm = v->cpu_idle_pm;
		__entry->target = target;
		__entry->room = room;
	),
	TP_printk("dev=%d:%d swapouts=%llu net_free=%u flash_free=%u net_us=%llu flash_us=%llu net_qd=%u flash_qd=%u idle_pm=%u target=%llu room=%llu",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->swapouts,
		  __entry->net_free, __entry->flash_free, __entry->net_us,
		  __entry->flash_us, __entry->net_qd, __entry->flash_qd,
		  __entry->idle_pm, __entry->target, __entry->room)
);

#endif /* _TRACE_NSWAP2L_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE nswap2l-trace
#include <trace/define_trace.h>
