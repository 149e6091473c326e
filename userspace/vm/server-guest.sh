# SPDX-License-Identifier: GPL-2.0-only
#
# Sourced by a benchmark that puts its page servers in a second guest
# (userspace/bench/servers-cpu):
#
#   server_guest_start NAME PLAN   boot guest NAME running
#                                  tests/vm/remote-servers with the servers
#                                  of PLAN (PORT:MB,...); sets client_link,
#                                  the client's n2l-vm --link
#   server_guest_stop              stop it and undo the link (run on EXIT)
#
# The guests' NICs are taps on a bridge of their own, with virtio's
# checksum and segmentation offloads, as userspace/bench/netram --remote
# has them; the link is not shaped. Both guests run on the wall clock:
# two guests' instruction counts are not one clock. Needs root.

server_guest_start() {	# name, plan
	local name=$1 plan=$2 py t
	py=$(python3 -c 'import sys; print(sys.executable)')
	mkdir -p build/vm	# its log's directory, before any guest made it
	sg_br=n2lbr$$ sg_srv=n2ls$$ sg_cli=n2lc$$
	ip link add "$sg_br" type bridge
	ip link set "$sg_br" up
	for t in "$sg_srv" "$sg_cli"; do
		ip tuntap add dev "$t" mode tap vnet_hdr
		ip link set "$t" master "$sg_br" up
	done
	N2L_ICOUNT=0 N2L_VM_CPUS=1 N2L_VM_MEM=${N2L_SERVER_VM_MEM:-2G} \
		N2L_VM_TIMEOUT=${N2L_VM_TIMEOUT:-14400} \
		userspace/vm/n2l-vm --out "build/vm/$name" --name "$name" \
		--link "listen:tap=$sg_srv" -- \
		env N2L_REMOTE_SERVERS="$plan" N2L_REMOTE_PSK="${N2L_REMOTE_PSK:-}" \
		"$py" tests/vm/remote-servers \
		>"build/vm/$name.log" 2>&1 &
	sg_pid=$!
	client_link="connect:tap=$sg_cli"
}

sg_descendants() {	# pid: its children, theirs, ...
	local p
	for p in $(pgrep -P "$1"); do
		echo "$p"
		sg_descendants "$p"
	done
}

server_guest_stop() {
	# The servers never stop by themselves: end the guest's processes,
	# QEMU among them (it would outlive n2l-vm), then the link (also
	# when the guest never started).
	if [ -n "${sg_pid:-}" ]; then
		# shellcheck disable=SC2046
		kill $(sg_descendants "$sg_pid") "$sg_pid" 2>/dev/null || true
		wait "$sg_pid" || true
	fi
	[ -n "${sg_br:-}" ] || return 0
	ip link del "$sg_srv" 2>/dev/null || true
	ip link del "$sg_cli" 2>/dev/null || true
	ip link del "$sg_br" 2>/dev/null || true
	sg_pid= sg_br=
}
