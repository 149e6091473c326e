/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The userspace half of policies/n2l-compat.h: the kernel facilities that
 * the portable parts of nswap2l use, with the kernel's names and
 * semantics, for the unit tests and the trace simulator.
 */
#ifndef N2L_COMPAT_USER_H
#define N2L_COMPAT_USER_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

#define __bitwise
#define __force
#define __always_unused		__attribute__((unused))
#define lockdep_assert_held(l)	((void)(l))
#define WARN_ON_ONCE(c)		((c) ? (fprintf(stderr, "WARN %s:%d\n", __FILE__, __LINE__), 1) : 0)

/*
 * Each argument evaluated once, as by the kernel's: a call in one runs
 * once. Both sides compared in their common type, as the kernel's min()
 * requires them to be of one type; the names are the macros' own.
 */
#define n2l_pick_(a, b, op)	({ __typeof__(0 ? (a) : (b)) n2l_pick_a_ = (a), \
				   n2l_pick_b_ = (b); \
				   n2l_pick_a_ op n2l_pick_b_ ? n2l_pick_a_ : n2l_pick_b_; })
#define min(a, b)		n2l_pick_(a, b, <)
#define max(a, b)		n2l_pick_(a, b, >)
#define min_t(t, a, b)		min((t)(a), (t)(b))
#define max_t(t, a, b)		max((t)(a), (t)(b))
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define container_of(p, t, m)	((t *)((char *)(p) - offsetof(t, m)))

static inline u64 div64_u64(u64 a, u64 b)
{
	return a / b;
}

#define n2l_zalloc(size)	calloc(1, (size))
#define n2l_free(p)		free(p)

#define U32_MAX			UINT32_MAX

/*
 * get_random_u32(), reproducibly: xorshift64*, seeded by n2l_random_seed()
 * so that a test or a simulation run can be repeated exactly.
 */
extern u64 n2l_random_state;
static inline void n2l_random_seed(u64 seed)
{
	n2l_random_state = seed ? seed : 0x9e3779b97f4a7c15ULL;
}
static inline u32 n2l_random_u32(void)
{
	u64 x = n2l_random_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	n2l_random_state = x;
	return (u32)((x * 0x2545f4914f6cdd1dULL) >> 32);
}

typedef pthread_mutex_t n2l_lock_t;
#define N2L_DEFINE_LOCK(name)	n2l_lock_t name = PTHREAD_MUTEX_INITIALIZER
#define n2l_lock(l)		pthread_mutex_lock(l)
#define n2l_unlock(l)		pthread_mutex_unlock(l)

/* Modules do not exist in userspace: every policy is always "loaded". */
struct module;
#define THIS_MODULE		((struct module *)NULL)
static inline bool try_module_get(struct module *m) { (void)m; return true; }
static inline void module_put(struct module *m) { (void)m; }

/* list.h, the subset used here */
struct list_head {
	struct list_head *next, *prev;
};
#define LIST_HEAD_INIT(name)	{ &(name), &(name) }
#define LIST_HEAD(name)		struct list_head name = LIST_HEAD_INIT(name)
static inline void INIT_LIST_HEAD(struct list_head *l)
{
	l->next = l;
	l->prev = l;
}
static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}
static inline void list_del_init(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	INIT_LIST_HEAD(n);
}
#define list_entry(p, t, m)	container_of(p, t, m)
#define list_for_each_entry(pos, head, member)				\
	for (pos = list_entry((head)->next, __typeof__(*pos), member);	\
	     &pos->member != (head);					\
	     pos = list_entry(pos->member.next, __typeof__(*pos), member))

/* bitmap.h / bitops.h, the subset used here (non-atomic variants) */
#define BITS_PER_LONG		((unsigned int)(sizeof(long) * CHAR_BIT))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define BITS_TO_LONGS(n)	DIV_ROUND_UP(n, BITS_PER_LONG)
#define BIT_WORD(n)		((n) / BITS_PER_LONG)
#define BIT_MASK(n)		(1UL << ((n) % BITS_PER_LONG))

static inline void __set_bit(unsigned long nr, unsigned long *map)
{
	map[BIT_WORD(nr)] |= BIT_MASK(nr);
}
static inline void __clear_bit(unsigned long nr, unsigned long *map)
{
	map[BIT_WORD(nr)] &= ~BIT_MASK(nr);
}
static inline bool test_bit(unsigned long nr, const unsigned long *map)
{
	return (map[BIT_WORD(nr)] & BIT_MASK(nr)) != 0;
}

static inline unsigned long n2l_find_next(const unsigned long *map,
					  unsigned long size,
					  unsigned long start, unsigned long invert)
{
	unsigned long word, idx;

	if (start >= size)
		return size;
	idx = BIT_WORD(start);
	word = (map[idx] ^ invert) & (~0UL << (start % BITS_PER_LONG));
	while (!word) {
		if (++idx >= BITS_TO_LONGS(size))
			return size;
		word = map[idx] ^ invert;
	}
	idx = idx * BITS_PER_LONG + (unsigned long)__builtin_ctzl(word);
	return min(idx, size);
}
static inline unsigned long find_next_bit(const unsigned long *map,
					  unsigned long size,
					  unsigned long start)
{
	return n2l_find_next(map, size, start, 0UL);
}
static inline unsigned long find_next_zero_bit(const unsigned long *map,
					       unsigned long size,
					       unsigned long start)
{
	return n2l_find_next(map, size, start, ~0UL);
}
static inline void bitmap_set(unsigned long *map, unsigned int start,
			      unsigned int len)
{
	while (len--)
		__set_bit(start++, map);
}
static inline void bitmap_clear(unsigned long *map, unsigned int start,
				unsigned int len)
{
	while (len--)
		__clear_bit(start++, map);
}

#endif /* N2L_COMPAT_USER_H */
