// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory pressure on demand, for tests only: while the module parameter
 * test_nomem is set, every allocation of the I/O, receive and event paths
 * finds what a machine at its min watermark, with nothing left to
 * reclaim, would give it:
 *
 *   - an allocation that may fail (it may not sleep, or it has
 *     __GFP_NORETRY or __GFP_RETRY_MAYFAIL) fails at once;
 *   - one that may not (a sleeping GFP_NOIO one, say: the page allocator
 *     retries it for as long as it takes, and calls no OOM killer for it)
 *     waits until the parameter is cleared, as it would wait for memory
 *     to come back.
 *
 * A mempool keeps its elements (its allocator passes __GFP_NORETRY and
 * falls back on them): that is what reserves are for. So a test tells a
 * path that waits for memory without a reserve (it hangs while the
 * parameter is set) from one that has a reserve or a way out. Production
 * never sets it.
 */
#include <linux/delay.h>
#include <linux/module.h>

#include "nnet.h"

static bool test_nomem;
module_param(test_nomem, bool, 0600);
MODULE_PARM_DESC(test_nomem,
		 "Tests only: the client's allocations find no free memory");

bool n2l_nomem(gfp_t gfp)
{
	if (likely(!READ_ONCE(test_nomem)))
		return false;
	if (!gfpflags_allow_blocking(gfp) ||
	    (gfp & (__GFP_NORETRY | __GFP_RETRY_MAYFAIL)))
		return true;
	while (READ_ONCE(test_nomem))
		msleep(20);
	return false;
}

void *n2l_pool_alloc_page(gfp_t gfp, void *data)
{
	return n2l_nomem(gfp) ? NULL : alloc_page(gfp);
}

void n2l_pool_free_page(void *page, void *data)
{
	__free_page(page);
}

void *n2l_pool_kmalloc(gfp_t gfp, void *size)
{
	return n2l_nomem(gfp) ? NULL : kmalloc((size_t)size, gfp);
}
