// SPDX-License-Identifier: GPL-2.0-only
/*
 * Keys come from the kernel keyring, as dm-crypt takes its own: a "logon"
 * key, whose payload the kernel never hands back to userspace, named in the
 * table line by its description. No secret is ever in a table line, a
 * module parameter or a process's arguments.
 */
#include <keys/user-type.h>
#include <linux/key.h>

#include "nswap2l.h"

/* The @len raw bytes of logon key @desc into @out; ti->error on failure. */
int n2l_read_logon_key(const char *desc, u8 *out, size_t len, char **error)
{
	const struct user_key_payload *ukp;
	struct key *key;
	int r = 0;

	key = request_key(&key_type_logon, desc, NULL);
	if (IS_ERR(key)) {
		*error = "Key not found: add it as a logon key (keyctl add logon ...)";
		return PTR_ERR(key);
	}
	down_read(&key->sem);
	ukp = user_key_payload_locked(key);
	if (!ukp) {
		*error = "Key was revoked";
		r = -EKEYREVOKED;
	} else if (ukp->datalen != len) {
		*error = "Key has the wrong length: it must be 32 raw bytes";
		r = -EINVAL;
	} else {
		memcpy(out, ukp->data, len);
	}
	up_read(&key->sem);
	key_put(key);
	return r;
}
