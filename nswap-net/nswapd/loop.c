// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sockets and the epoll loop: non-blocking everywhere, level-triggered,
 * reads into a connection's buffer, whole frames handed to conn_process(),
 * queued replies sent with as few send() calls as the socket allows.
 * Signals arrive through a signalfd.
 */
#include "server.h"
#include "netaddr.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define TICK_MS		100
#define READS_PER_EVENT	16

void loop_conn_events(struct conn *c)
{
	struct epoll_event ev = { .data.ptr = &c->ev };
	uint32_t want = 0;

	if (c->dead || c->fd < 0 || c->srv->epfd < 0)
		return;
	if (c->connecting) {
		want = EPOLLOUT;
	} else {
		if (!c->paused && !c->closing)
			want |= EPOLLIN;
		if (buf_len(&c->out))
			want |= EPOLLOUT;
	}
	if (want == c->events)
		return;
	ev.events = want;
	if (epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		conn_kill(c, "epoll_ctl failed");
	else
		c->events = want;
}

void loop_flush(struct conn *c)
{
	if (c->dead)
		return;
	conn_seal(c);
	if (c->dead)
		return;
	if (c->fd < 0) {		/* no socket: the output goes nowhere */
		buf_consume(&c->out, buf_len(&c->out));
	}
	while (buf_len(&c->out)) {
		ssize_t n = send(c->fd, buf_data(&c->out), buf_len(&c->out),
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			buf_consume(&c->out, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		conn_kill(c, n < 0 ? strerror(errno) : "send failed");
		return;
	}
	if (!buf_len(&c->out) && c->closing) {
		conn_kill(c, NULL);
		return;
	}
	if (c->paused && buf_len(&c->out) <= OUT_LOW) {
		c->paused = false;
		log_debug(&c->srv->log, "connection %s: replies drained: reading again", c->name);
		conn_process(c);	/* frames already buffered */
	}
	loop_conn_events(c);
}

/*
 * How much to read now: as much as fits, but before authentication no
 * more than one handshake frame in all (its header was checked or will
 * be before more is read).
 */
static size_t read_room(struct conn *c)
{
	size_t held = buf_len(&c->in);

	if (!conn_ready(c)) {
		if (held >= N2L_PREAUTH_FRAME)
			return 0;
		if (!buf_space(&c->in, N2L_PREAUTH_FRAME - held))
			return 0;
		return N2L_PREAUTH_FRAME - held;
	}
	if (c->in.cap - c->in.tail < 4096 && !buf_space(&c->in, IN_MIN))
		return 0;
	return c->in.cap - c->in.tail;
}

static void conn_read(struct conn *c)
{
	for (int i = 0; i < READS_PER_EVENT; i++) {
		size_t room;
		ssize_t n;

		if (c->dead || c->paused || c->closing || c->connecting)
			break;
		room = read_room(c);
		if (!room) {
			if (!c->in.p)
				conn_kill(c, "out of memory for input");
			break;
		}
		n = read(c->fd, c->in.p + c->in.tail, room);
		if (n > 0) {
			c->in.tail += (size_t)n;
			conn_process(c);
			continue;
		}
		if (n == 0) {
			if (buf_len(&c->in)) {
				char why[96];

				snprintf(why, sizeof(why), "closed by the other side in the middle of a frame (%zu bytes)",
					 buf_len(&c->in));
				conn_kill(c, why);
			} else {
				conn_kill(c, "closed by the other side");
			}
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			conn_kill(c, strerror(errno));
		break;
	}
	loop_conn_events(c);
}

static int epoll_add(struct server *srv, int fd, uint32_t events, struct evsrc *src)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	return epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void sock_options(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

/* Over a cap: closed at once, logged now and then. */
static void refuse_conn(struct server *srv, int fd, const char *name)
{
	int64_t now = server_now(srv);

	close(fd);
	srv->cap_refused++;
	if (srv->cap_logged_ms && now - srv->cap_logged_ms < CAP_LOG_MS)
		return;
	log_warn(&srv->log, "connection %s: over the connection caps (%" PRIu64 " in all, %" PRIu64 " per address): closed (%" PRIu64 " refused so)",
		 name, srv->cfg.max_conns, srv->cfg.max_conns_per_addr, srv->cap_refused);
	srv->cap_logged_ms = now;
	srv->cap_refused = 0;
}

/*
 * Accepted at most per wakeup. Each connection a full cap admits closes
 * another, whose owner may reconnect at once: accepting until EAGAIN
 * never ended under such churn, and the connections already in (a
 * client's HELLO among them) waited 20 s and more. The listener is
 * level-triggered, so what is left is taken on the next turn.
 */
#define ACCEPT_BATCH	32

static void on_accept(struct server *srv, struct listener *l)
{
	for (int n = 0; n < ACCEPT_BATCH; n++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char name[N2L_ADDR_LEN + 8];
		uint8_t key[16];
		struct conn *c;
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			log_warn(&srv->log, "listener %s: accept: %s; pausing it for a moment",
				 l->name, strerror(errno));
			{
				struct epoll_event ev = { .events = 0, .data.ptr = &l->ev };

				epoll_ctl(srv->epfd, EPOLL_CTL_MOD, l->fd, &ev);
			}
			l->paused = true;
			return;
		}
		netaddr_format((struct sockaddr *)&ss, name, sizeof(name));
		netaddr_key(&ss, key);
		if (!admit_conn(srv, key, name)) {
			refuse_conn(srv, fd, name);
			continue;
		}
		sock_options(fd);
		c = conn_new(srv, fd, CONN_IN, name);
		if (!c) {
			close(fd);
			continue;
		}
		memcpy(c->addr, key, sizeof(key));
		if (epoll_add(srv, fd, EPOLLIN, &c->ev)) {
			conn_kill(c, "epoll_ctl failed");
			continue;
		}
		c->events = EPOLLIN;
		log_info(&srv->log, "connection %s: accepted", c->name);
	}
}

int loop_connect(struct server *srv, struct peer *p)
{
	struct conn *c;
	int fd, rc;

	if (srv->epfd < 0)	/* no event loop (tests, fuzzing) */
		return -1;
	fd = socket(p->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_warn(&srv->log, "peer %s: socket: %s", p->addr, strerror(errno));
		return -1;
	}
	sock_options(fd);
	rc = connect(fd, (struct sockaddr *)&p->sa, p->salen);
	if (rc && errno != EINPROGRESS) {
		log_warn(&srv->log, "peer %s: connect: %s", p->addr, strerror(errno));
		close(fd);
		return -1;
	}
	c = conn_new(srv, fd, CONN_PEER, p->addr);
	if (!c) {
		close(fd);
		return -1;
	}
	c->peer = p;
	c->connecting = true;
	c->deadline_ms = server_now(srv) + (int64_t)srv->cfg.request_timeout_s * 1000;
	p->conn = c;
	p->state = PEER_CONNECTING;
	if (epoll_add(srv, fd, EPOLLOUT, &c->ev)) {
		conn_kill(c, "epoll_ctl failed");
		return 0;	/* reaping tells the peer */
	}
	c->events = EPOLLOUT;
	log_debug(&srv->log, "peer %s: connecting", p->addr);
	if (rc == 0)
		peer_connected(c);
	return 0;
}

static void on_conn(struct conn *c, uint32_t events)
{
	if (c->dead)
		return;
	if (c->connecting) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
			conn_kill(c, strerror(err ? err : errno));
			return;
		}
		peer_connected(c);
		return;
	}
	if (events & EPOLLERR) {
		conn_kill(c, "socket error");
		return;
	}
	if (events & EPOLLOUT)
		loop_flush(c);
	if (events & (EPOLLIN | EPOLLHUP)) {
		if (c->events & EPOLLIN)
			conn_read(c);
		else if (events & EPOLLHUP)
			conn_kill(c, "hung up");
	}
}

/* SIGHUP: the configuration and the keys again, or neither. */
static void reload(struct server *srv)
{
	struct config ncfg;
	struct psk_table keys;
	char err[512];
	int rc = config_load(&ncfg, srv->argc, srv->argv, err, sizeof(err));

	log_info(&srv->log, "SIGHUP: reloading the configuration");
	if (rc == CONFIG_OK && keys_load(&ncfg, &keys, err, sizeof(err)))
		rc = CONFIG_ERROR;
	if (rc != CONFIG_OK) {
		log_err(&srv->log, "reload failed: %s; keeping the old configuration and keys",
			rc == CONFIG_HELP ? "--help" : err);
		return;
	}
	server_set_keys(srv, &keys);
	server_reload(srv, &ncfg);
}

static void on_signal(struct server *srv)
{
	struct signalfd_siginfo si;

	while (read(srv->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload(srv);
		} else {
			log_info(&srv->log, "%s received", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
			server_drain(srv);
		}
	}
}

static int listen_on(struct server *srv, const char *addr)
{
	struct listener *l = &srv->listeners[srv->nlisteners];
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, zero = 0, fd;

	if (netaddr_parse(addr, true, &ss, &sl))
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 && ss.ss_family == AF_INET6 && !strcmp(addr, CFG_DEFAULT_LISTEN)) {
		log_warn(&srv->log, "no IPv6 here: listening on IPv4 only");
		return listen_on(srv, "0.0.0.0:7077");
	}
	if (fd < 0) {
		log_err(&srv->log, "listen %s: socket: %s", addr, strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)	/* [::] takes IPv4 too */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, SOMAXCONN)) {
		log_err(&srv->log, "listen %s: %s", addr, strerror(errno));
		close(fd);
		return -1;
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	netaddr_format((struct sockaddr *)&ss, l->name, sizeof(l->name));
	l->ev.type = EV_LISTENER;
	l->fd = fd;
	if (epoll_add(srv, fd, EPOLLIN, &l->ev)) {
		close(fd);
		return -1;
	}
	srv->nlisteners++;
	log_info(&srv->log, "listening on %s", l->name);
	return 0;
}

int loop_init(struct server *srv)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (srv->epfd < 0) {
		log_err(&srv->log, "epoll_create1: %s", strerror(errno));
		return -1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	srv->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (srv->sigfd < 0 || epoll_add(srv, srv->sigfd, EPOLLIN, &srv->sig_ev)) {
		log_err(&srv->log, "signalfd: %s", strerror(errno));
		return -1;
	}
	for (unsigned int i = 0; i < srv->cfg.nlisten; i++)
		if (listen_on(srv, srv->cfg.listen[i]))
			return -1;
	return 0;
}

int loop_run(struct server *srv)
{
	struct epoll_event evs[64];
	int64_t next_tick = server_now(srv);

	while (srv->exit_code < 0) {
		int64_t now = server_now(srv);
		int timeout = next_tick > now ? (int)(next_tick - now) : 0;
		int n = epoll_wait(srv->epfd, evs, 64, timeout);

		if (n < 0 && errno != EINTR) {
			log_err(&srv->log, "epoll_wait: %s", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct evsrc *src = evs[i].data.ptr;

			switch (src->type) {
			case EV_LISTENER:
				on_accept(srv, (struct listener *)src);
				break;
			case EV_CONN:
				on_conn((struct conn *)src, evs[i].events);
				break;
			case EV_SIGNAL:
				on_signal(srv);
				break;
			}
		}
		now = server_now(srv);
		if (now >= next_tick) {
			server_tick(srv);
			for (unsigned int i = 0; i < srv->nlisteners; i++) {
				struct listener *l = &srv->listeners[i];
				struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &l->ev };

				if (l->paused && !epoll_ctl(srv->epfd, EPOLL_CTL_MOD, l->fd, &ev))
					l->paused = false;
			}
			next_tick = now + TICK_MS;
		}
		server_after_events(srv);
	}
	return srv->exit_code;
}

void loop_fini(struct server *srv)
{
	for (unsigned int i = 0; i < srv->nlisteners; i++)
		close(srv->listeners[i].fd);
	srv->nlisteners = 0;
	if (srv->sigfd >= 0)
		close(srv->sigfd);
	if (srv->epfd >= 0)
		close(srv->epfd);
	srv->sigfd = srv->epfd = -1;
}
