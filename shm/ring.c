// SPDX-License-Identifier: MIT
/*
 * Cross-process SPSC ring. The protocol and its memory-ordering argument are in
 * docs/ring.md; the barrier labels (A) to (F) below refer to it:
 *
 *   producer                                consumer
 *   write records                           (C) head = load_acquire(hdr->head)
 *   (A) store_seq_cst(hdr->head, head)      copy records in [tail, head)
 *   (B) load_seq_cst(consumer_waiting):     (E) store_release(hdr->tail, tail)
 *       if set, clear it and futex_wake     ---
 *   (F) tail = load_acquire(hdr->tail)      (D) store_seq_cst(consumer_waiting, 1);
 *       before reusing space                    load_seq_cst(hdr->head); if still empty,
 *                                               futex_wait(consumer_waiting, 1)
 *
 * (A) pairs with (C): the consumer sees every byte of a record before it sees the head
 * that covers it (a seq_cst store is also a release). (E) pairs with (F): the producer
 * overwrites bytes only after the consumer has finished copying them. (A)+(B) pair with (D):
 * both are a seq_cst store followed by a seq_cst load of the other side's word, so in the
 * single total order of seq_cst operations at least one side sees the other's store: either
 * the consumer sees the new head and does not sleep, or the producer sees the flag and wakes
 * it (no lost wake-up). Seq_cst operations rather than fences: ThreadSanitizer models them,
 * and on x86 the store compiles to one xchg, the same cost as a store plus mfence.
 */
#include "shm/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "xpusup/event.h"

struct ring {
	struct xpu_ring_hdr *hdr;
	unsigned char *data;
	__u64 capacity; /* cached at open: never re-read from shared memory */
	__u64 mask;
	__u32 max_record;
	enum ring_role role;
	int fd; /* -1 for memory rings */
	void *map;
	size_t map_len;
	ring_validate_fn validate; /* VALIDATE_FN only */
	enum { VALIDATE_EVENT, VALIDATE_FN, VALIDATE_NONE } validate_mode;

	/* producer side: head runs ahead of published until ring__flush */
	__u64 head;
	__u64 published;
	__u64 cached_tail;
	__u32 reserved_size;
	__u64 produced;
	__u64 produced_bytes;
	__u64 lost_full;
	__u64 lost_too_big;
	__u64 reported_full;
	__u64 reported_too_big;
	__u64 loss_records;
	__u64 wakeups;
	__u64 first_loss_ns[XPU_LOSS_CAUSE_MAX];
	__u64 publish_bytes; /* commit publishes by itself past this many unpublished bytes */
	__u32 pid;

	/* consumer side: tail runs ahead of released until ring__release */
	__u64 tail;
	__u64 released;
	__u64 cached_head;
	__u64 bad_head; /* last corrupt head value counted, so one corruption counts once */
	__u64 consumed;
	__u64 consumed_bytes;
	__u64 corrupt;
	__u64 skipped_bytes;
	__u64 sleeps;
	__u64 release_bytes;
	bool hold; /* ring__hold: release only when the caller says */
	unsigned char *scratch; /* private copy of the record being handed over */
};

#define RING_SPIN_NS 20000ull /* ring__wait polls this long before it sleeps */

#define load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static bool is_pow2(__u64 v)
{
	return v && !(v & (v - 1));
}

__u32 ring__default_max_record(__u64 capacity)
{
	__u64 quarter = capacity / 4;

	return quarter < XPU_REC_MAX_SIZE ? (__u32)quarter : XPU_REC_MAX_SIZE;
}

static int check_geometry(__u64 capacity, __u32 max_record)
{
	if (!is_pow2(capacity) || capacity < XPU_RING_MIN_CAPACITY ||
	    capacity > XPU_RING_MAX_CAPACITY)
		return -EINVAL;
	if (max_record < sizeof(struct xpu_rec) || max_record % XPU_REC_ALIGN ||
	    max_record > capacity / 4)
		return -EINVAL;
	return 0;
}

static void format_hdr(struct xpu_ring_hdr *hdr, __u64 capacity, __u32 max_record)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = XPU_RING_MAGIC;
	hdr->abi = XPU_RING_ABI;
	hdr->event_abi = XPU_EVENT_ABI;
	hdr->hdr_size = XPU_RING_HDR_SIZE;
	hdr->align = XPU_REC_ALIGN;
	hdr->capacity = capacity;
	hdr->max_record = max_record;
	hdr->creator_pid = (__u32)getpid();
	hdr->created_ns = now_ns();
}

int ring__format_mem(void *mem, size_t len, __u64 capacity, __u32 max_record)
{
	if (!max_record)
		max_record = ring__default_max_record(capacity);
	if (check_geometry(capacity, max_record) || len < XPU_RING_HDR_SIZE + capacity ||
	    ((uintptr_t)mem % XPU_REC_ALIGN))
		return -EINVAL;
	format_hdr(mem, capacity, max_record);
	return 0;
}

int ring__create(int dirfd, const char *name, __u64 capacity, __u32 max_record)
{
	char tmp[NAME_MAX + 1];
	struct xpu_ring_hdr hdr;
	struct stat st;
	int fd, err;

	if (!max_record)
		max_record = ring__default_max_record(capacity);
	if (check_geometry(capacity, max_record))
		return -EINVAL;
	if (fstat(dirfd, &st))
		return -errno;
	/* Records carry stacks and command lines: keep them from other users. */
	if (!S_ISDIR(st.st_mode) || (st.st_mode & 077))
		return -EPERM;
	if (faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	if (snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;

	fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(XPU_RING_HDR_SIZE + capacity))) {
		err = -errno;
		goto err_unlink;
	}
	format_hdr(&hdr, capacity, max_record);
	if (pwrite(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
		err = -EIO;
		goto err_unlink;
	}
	/* renameat2(RENAME_NOREPLACE) so two creators cannot both win. */
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE)) {
		err = -errno;
		goto err_unlink;
	}
	close(fd);
	return 0;

err_unlink:
	unlinkat(dirfd, tmp, 0);
	close(fd);
	return err;
}

int ring__unlink(int dirfd, const char *name)
{
	return unlinkat(dirfd, name, 0) ? -errno : 0;
}

/* Validate the immutable part of a header, copied out first so that a concurrent scribbler
 * cannot change a field between its check and its use. */
static int check_hdr(const struct xpu_ring_hdr *shared, size_t len, __u64 *capacity,
		     __u32 *max_record)
{
	struct xpu_ring_hdr h;

	if (len < XPU_RING_HDR_SIZE)
		return -EBADMSG;
	memcpy(&h, shared, 128);
	if (h.magic != XPU_RING_MAGIC || h.abi != XPU_RING_ABI || h.event_abi != XPU_EVENT_ABI ||
	    h.hdr_size != XPU_RING_HDR_SIZE || h.align != XPU_REC_ALIGN)
		return -EBADMSG;
	if (check_geometry(h.capacity, h.max_record) || len < XPU_RING_HDR_SIZE + h.capacity)
		return -EBADMSG;
	*capacity = h.capacity;
	*max_record = h.max_record;
	return 0;
}

/* An OFD lock on one byte per side: held for the life of the open file description,
 * dropped by the kernel when its holder dies, so restarts need no cleanup. */
static int lock_side(int fd, enum ring_role role)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = role == RING_PRODUCER ? 0 : 1,
		.l_len = 1,
	};

	if (fcntl(fd, F_OFD_SETLK, &fl))
		return errno == EAGAIN || errno == EACCES ? -EBUSY : -errno;
	return 0;
}

static bool head_sane(__u64 head, __u64 tail, __u64 capacity)
{
	return head % XPU_REC_ALIGN == 0 && head >= tail && head - tail <= capacity;
}

static void attach_producer(struct ring *r)
{
	struct xpu_ring_hdr *hdr = r->hdr;
	__u64 head = load_relaxed(&hdr->head);
	__u64 tail = load_acquire(&hdr->tail); /* (F) */

	r->pid = (__u32)getpid();
	if (!head_sane(head, tail, r->capacity)) {
		/* The producer owns head: a corrupt one (crashed writer, scribble) is reset to
		 * the consumer's position, dropping only bytes no one could frame anyway. */
		head = tail & ~(__u64)(XPU_REC_ALIGN - 1);
		store_relaxed(&hdr->producer_resets, load_relaxed(&hdr->producer_resets) + 1);
		store_release(&hdr->head, head);
	}
	r->head = r->published = head;
	r->cached_tail = tail;
	r->produced = load_relaxed(&hdr->produced);
	r->produced_bytes = load_relaxed(&hdr->produced_bytes);
	r->lost_full = load_relaxed(&hdr->lost_full);
	r->lost_too_big = load_relaxed(&hdr->lost_too_big);
	r->reported_full = load_relaxed(&hdr->reported_full);
	r->reported_too_big = load_relaxed(&hdr->reported_too_big);
	if (r->reported_full > r->lost_full)
		r->reported_full = r->lost_full;
	if (r->reported_too_big > r->lost_too_big)
		r->reported_too_big = r->lost_too_big;
	r->loss_records = load_relaxed(&hdr->loss_records);
	r->wakeups = load_relaxed(&hdr->wakeups);
	r->publish_bytes = r->capacity / 4;
	store_relaxed(&hdr->producer_pid, r->pid);
	store_relaxed(&hdr->producer_attaches, load_relaxed(&hdr->producer_attaches) + 1);
}

static void attach_consumer(struct ring *r)
{
	struct xpu_ring_hdr *hdr = r->hdr;
	__u64 tail = load_relaxed(&hdr->tail);
	__u64 head = load_acquire(&hdr->head); /* (C) */

	r->consumed = load_relaxed(&hdr->consumed);
	r->consumed_bytes = load_relaxed(&hdr->consumed_bytes);
	r->corrupt = load_relaxed(&hdr->corrupt);
	r->skipped_bytes = load_relaxed(&hdr->skipped_bytes);
	r->sleeps = load_relaxed(&hdr->sleeps);
	if (tail % XPU_REC_ALIGN || tail > head || head - tail > r->capacity) {
		/* The consumer owns tail; if it cannot be trusted, neither can anything
		 * between it and head: skip to head, once, and count it. */
		if (head_sane(head, head, r->capacity)) {
			r->corrupt++;
			tail = head;
		} else {
			tail &= ~(__u64)(XPU_REC_ALIGN - 1);
		}
	}
	r->tail = r->released = r->cached_head = tail;
	r->release_bytes = r->capacity / 4;
	store_release(&hdr->tail, tail); /* (E) */
	store_relaxed(&hdr->corrupt, r->corrupt);
	store_relaxed(&hdr->consumer_pid, (__u32)getpid());
	store_relaxed(&hdr->consumer_attaches, load_relaxed(&hdr->consumer_attaches) + 1);
}

static struct ring *ring_new(void *map, size_t len, enum ring_role role)
{
	struct ring *r;
	__u64 capacity;
	__u32 max_record;

	if (role != RING_PRODUCER && role != RING_CONSUMER && role != RING_OBSERVER) {
		errno = EINVAL;
		return NULL;
	}
	if (check_hdr(map, len, &capacity, &max_record)) {
		errno = EBADMSG;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (role == RING_CONSUMER) {
		r->scratch = aligned_alloc(XPU_REC_ALIGN, XPU_ROUND_UP8(max_record));
		if (!r->scratch) {
			free(r);
			return NULL;
		}
	}
	r->hdr = map;
	r->data = (unsigned char *)map + XPU_RING_HDR_SIZE;
	r->capacity = capacity;
	r->mask = capacity - 1;
	r->max_record = max_record;
	r->role = role;
	r->fd = -1;
	r->validate_mode = VALIDATE_EVENT;
	if (role == RING_PRODUCER)
		attach_producer(r);
	else if (role == RING_CONSUMER)
		attach_consumer(r);
	return r;
}

struct ring *ring__open_mem(void *mem, size_t len, enum ring_role role)
{
	return ring_new(mem, len, role);
}

struct ring *ring__open_fd(int fd, enum ring_role role)
{
	struct ring *r;
	struct stat st;
	void *map;
	int myfd, err;

	myfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (myfd < 0)
		return NULL;
	if (fstat(myfd, &st)) {
		err = errno;
		goto err_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)XPU_RING_HDR_SIZE ||
	    (__u64)st.st_size > XPU_RING_HDR_SIZE + XPU_RING_MAX_CAPACITY) {
		err = EBADMSG;
		goto err_close;
	}
	if (role != RING_OBSERVER) {
		err = -lock_side(myfd, role);
		if (err)
			goto err_close;
	}
	map = mmap(NULL, (size_t)st.st_size,
		   role == RING_OBSERVER ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, myfd, 0);
	if (map == MAP_FAILED) {
		err = errno;
		goto err_close;
	}
	r = ring_new(map, (size_t)st.st_size, role);
	if (!r) {
		err = errno;
		goto err_unmap;
	}
	r->fd = myfd;
	r->map = map;
	r->map_len = (size_t)st.st_size;
	return r;

err_unmap:
	munmap(map, (size_t)st.st_size);
err_close:
	close(myfd); /* drops the side lock with the file description */
	errno = err;
	return NULL;
}

struct ring *ring__open(int dirfd, const char *name, enum ring_role role)
{
	struct ring *r;
	int fd, err;

	fd = openat(dirfd, name,
		    (role == RING_OBSERVER ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	r = ring__open_fd(fd, role);
	err = errno;
	close(fd);
	errno = err;
	return r;
}

void ring__close(struct ring *r)
{
	if (!r)
		return;
	if (r->role == RING_PRODUCER)
		ring__flush(r);
	else if (r->role == RING_CONSUMER && !r->hold)
		ring__release(r);
	if (r->map)
		munmap(r->map, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	free(r->scratch);
	free(r);
}

/* ---- producer ---- */

static __u64 space_for(struct ring *r, __u64 need)
{
	__u64 used = r->head - r->cached_tail;

	if (used + need <= r->capacity)
		return 1;
	r->cached_tail = load_acquire(&r->hdr->tail); /* (F) pairs with (E) */
	/* A tail we cannot believe (ahead of our head, or too far behind) means no room:
	 * writing on its word could overwrite unread records. */
	if (r->cached_tail > r->head || r->head - r->cached_tail > r->capacity) {
		r->cached_tail = r->head - r->capacity;
		return 0;
	}
	return r->head - r->cached_tail + need <= r->capacity;
}

/* Make room for size contiguous bytes at head, writing a PAD to the end of the buffer when
 * the record would straddle it. Returns the record's position or NULL when full. */
static void *make_room(struct ring *r, __u32 size)
{
	__u64 pos = r->head & r->mask;
	__u64 pad = r->capacity - pos < size ? r->capacity - pos : 0;
	struct xpu_pad *p;

	if (!space_for(r, pad + size))
		return NULL;
	if (pad) {
		p = (struct xpu_pad *)(r->data + pos);
		p->type = XPU_REC_PAD;
		p->flags = 0;
		p->size = (__u32)pad;
		r->head += pad;
	}
	return r->data + (r->head & r->mask);
}

static inline bool losses_pending(const struct ring *r)
{
	return r->lost_full != r->reported_full || r->lost_too_big != r->reported_too_big;
}

bool ring__fits(struct ring *r, __u32 size)
{
	__u64 pos = r->head & r->mask;
	__u64 need = size + (r->capacity - pos < size ? r->capacity - pos : 0);

	if (size > r->max_record)
		return false;
	/* Pending LOSS records go first, and they move the wrap point: bound the worst case
	 * (a pad before them, two of them, a pad of up to size - 8 after them) rather than
	 * simulate it. Erring large only makes a waiting producer wait a little longer. */
	if (losses_pending(r))
		need = 2ull * size + 3 * sizeof(struct xpu_loss);
	return space_for(r, need);
}

static void note_loss(struct ring *r, __u32 cause)
{
	bool first = cause == XPU_LOSS_RING_FULL ? r->lost_full == r->reported_full :
						   r->lost_too_big == r->reported_too_big;

	if (first)
		r->first_loss_ns[cause] = now_ns();
	if (cause == XPU_LOSS_RING_FULL)
		r->lost_full++;
	else
		r->lost_too_big++;
}

static bool emit_one_loss(struct ring *r, __u32 cause, __u64 lost, __u64 *reported)
{
	void *p;

	if (lost == *reported)
		return true;
	p = make_room(r, sizeof(struct xpu_loss));
	if (!p)
		return false;
	xpu_loss__build(p, sizeof(struct xpu_loss), now_ns(), r->pid, cause, lost - *reported,
			r->first_loss_ns[cause]);
	r->head += sizeof(struct xpu_loss);
	*reported = lost;
	r->loss_records++;
	return true;
}

/* Tell the consumer in-band what was dropped, as soon as there is room for it. */
static bool emit_losses(struct ring *r)
{
	return emit_one_loss(r, XPU_LOSS_RING_FULL, r->lost_full, &r->reported_full) &&
	       emit_one_loss(r, XPU_LOSS_TOO_BIG, r->lost_too_big, &r->reported_too_big);
}

static void *reserve(struct ring *r, __u32 size, bool drop_when_full)
{
	void *p;

	if (size < sizeof(struct xpu_pad) || size % XPU_REC_ALIGN) {
		errno = EINVAL;
		return NULL;
	}
	if (size > r->max_record) {
		note_loss(r, XPU_LOSS_TOO_BIG);
		errno = E2BIG;
		return NULL;
	}
	/* The LOSS records go first so the consumer learns of a gap before what follows it. */
	if (__builtin_expect(losses_pending(r), 0) && !emit_losses(r))
		goto full;
	p = make_room(r, size);
	if (!p)
		goto full;
	r->reserved_size = size;
	return p;
full:
	if (drop_when_full) {
		note_loss(r, XPU_LOSS_RING_FULL);
		errno = ENOBUFS;
	} else {
		errno = EAGAIN;
	}
	return NULL;
}

void *ring__reserve(struct ring *r, __u32 size)
{
	return reserve(r, size, true);
}

void *ring__try_reserve(struct ring *r, __u32 size)
{
	return reserve(r, size, false);
}

void ring__commit(struct ring *r)
{
	r->head += r->reserved_size;
	r->produced++;
	r->produced_bytes += r->reserved_size;
	r->reserved_size = 0;
	if (r->head - r->published >= r->publish_bytes)
		ring__flush(r);
}

int ring__write(struct ring *r, const void *rec, __u32 size)
{
	void *p = ring__reserve(r, size);

	if (!p)
		return -errno;
	memcpy(p, rec, size);
	ring__commit(r);
	return 0;
}

static long futex(__u32 *uaddr, int op, __u32 val, const struct timespec *timeout)
{
	/* Not FUTEX_PRIVATE_FLAG: the word is shared between processes. */
	return syscall(SYS_futex, uaddr, op, val, timeout, NULL, 0);
}

int ring__flush(struct ring *r)
{
	struct xpu_ring_hdr *hdr = r->hdr;

	if (losses_pending(r))
		emit_losses(r);
	/* Loss counters go out even when nothing can be published: a full ring is exactly
	 * when status must show them. */
	store_relaxed(&hdr->lost_full, r->lost_full);
	store_relaxed(&hdr->lost_too_big, r->lost_too_big);
	if (r->head == r->published)
		return 0;
	store_relaxed(&hdr->produced, r->produced);
	store_relaxed(&hdr->produced_bytes, r->produced_bytes);
	store_relaxed(&hdr->reported_full, r->reported_full);
	store_relaxed(&hdr->reported_too_big, r->reported_too_big);
	store_relaxed(&hdr->loss_records, r->loss_records);
	__atomic_store_n(&hdr->head, r->head, __ATOMIC_SEQ_CST); /* (A) pairs with (C), (D) */
	r->published = r->head;
	if (__atomic_load_n(&hdr->consumer_waiting, __ATOMIC_SEQ_CST) && /* (B) pairs with (D) */
	    __atomic_exchange_n(&hdr->consumer_waiting, 0, __ATOMIC_RELAXED)) {
		futex(&hdr->consumer_waiting, FUTEX_WAKE, 1, NULL);
		store_relaxed(&hdr->wakeups, ++r->wakeups);
	}
	return 0;
}

/* ---- consumer ---- */

void ring__set_validate(struct ring *r, ring_validate_fn validate)
{
	/* The event validator is inlined on the read path rather than called through the
	 * pointer: at 64-byte records the call is a measurable share of the consumer. */
	r->validate = validate;
	if (validate == xpu_rec__validate)
		r->validate_mode = VALIDATE_EVENT;
	else
		r->validate_mode = validate ? VALIDATE_FN : VALIDATE_NONE;
}

static void count_corrupt(struct ring *r, __u64 skipped)
{
	r->corrupt++;
	r->skipped_bytes += skipped;
	store_relaxed(&r->hdr->corrupt, r->corrupt);
	store_relaxed(&r->hdr->skipped_bytes, r->skipped_bytes);
}

/* order is ACQUIRE for (C), or SEQ_CST for the re-check after (D). */
static __u64 readable(struct ring *r, int order)
{
	__u64 head;

	if (r->cached_head != r->tail)
		return r->cached_head - r->tail;
	head = __atomic_load_n(&r->hdr->head, order); /* (C) pairs with (A) */
	if (!head_sane(head, r->tail, r->capacity)) {
		/* Nothing between tail and a head we cannot believe is safe to frame. Count
		 * each bad value once and wait for the producer to reset it on re-attach. */
		if (head != r->bad_head) {
			r->bad_head = head;
			count_corrupt(r, 0);
		}
		return 0;
	}
	r->cached_head = head;
	return head - r->tail;
}

__u64 ring__readable(struct ring *r)
{
	return readable(r, __ATOMIC_ACQUIRE);
}

/* Skip a record we cannot frame: records never straddle the end of the buffer, so the start
 * of the next lap is always a record boundary if head has reached it. */
static void resync(struct ring *r)
{
	__u64 next_lap = (r->tail | r->mask) + 1;
	__u64 to = r->cached_head < next_lap ? r->cached_head : next_lap;

	count_corrupt(r, to - r->tail);
	r->tail = to;
}

/* Small records are copied inline in 8-byte words (sizes are multiples of 8): a call into
 * the C library's memcpy costs as much as the copy itself at 64 bytes. */
static inline void copy_record(void *dst, const unsigned char *src, __u32 size)
{
	__u64 *d = dst, w;
	__u32 i;

	if (size > 128) {
		memcpy(dst, src, size);
		return;
	}
	for (i = 0; i < size / 8; i++) {
		memcpy(&w, src + 8 * i, 8);
		d[i] = w;
	}
}

static inline bool record_valid(const struct ring *r, const void *buf, __u32 size)
{
	switch (r->validate_mode) {
	case VALIDATE_EVENT:
		return xpu_rec__check(buf, size) == 0;
	case VALIDATE_FN:
		return r->validate(buf, size) == 0;
	default:
		return true;
	}
}

void ring__hold(struct ring *r, bool hold)
{
	r->hold = hold;
}

__u64 ring__read_pos(const struct ring *r)
{
	return r->tail;
}

__u64 ring__unreleased(const struct ring *r)
{
	return r->tail - r->released;
}

void ring__release(struct ring *r)
{
	struct xpu_ring_hdr *hdr = r->hdr;

	if (r->tail == r->released)
		return;
	store_relaxed(&hdr->consumed, r->consumed);
	store_relaxed(&hdr->consumed_bytes, r->consumed_bytes);
	store_release(&hdr->tail, r->tail); /* (E) pairs with (F) */
	r->released = r->tail;
}

int ring__read(struct ring *r, void *buf, size_t cap)
{
	struct xpu_pad frame;
	__u64 avail, pos, contig;
	__u32 size;

	for (;;) {
		avail = ring__readable(r);
		if (!avail)
			return 0;
		pos = r->tail & r->mask;
		contig = r->capacity - pos;
		memcpy(&frame, r->data + pos, sizeof(frame));
		size = frame.size;
		if (size < sizeof(frame) || size % XPU_REC_ALIGN || size > contig || size > avail) {
			resync(r);
			continue;
		}
		if (frame.type == XPU_REC_PAD) {
			if (size != contig) {
				resync(r);
				continue;
			}
			r->tail += size;
			continue;
		}
		if (size > r->max_record) {
			resync(r);
			continue;
		}
		if (size > cap)
			return -EMSGSIZE;
		copy_record(buf, r->data + pos, size);
		r->tail += size;
		if (!record_valid(r, buf, size)) {
			count_corrupt(r, size);
			continue;
		}
		r->consumed++;
		r->consumed_bytes += size;
		/* After the counters: a release publishes them with the tail. */
		if (!r->hold && r->tail - r->released >= r->release_bytes)
			ring__release(r);
		return (int)size;
	}
}

int ring__consume(struct ring *r, ring_record_fn fn, void *ctx, unsigned int max)
{
	unsigned int n = 0;
	int size;

	while (n < max) {
		size = ring__read(r, r->scratch, r->max_record);
		if (size <= 0) {
			if (size < 0) {
				ring__release(r);
				return size;
			}
			break;
		}
		n++;
		if (fn(r->scratch, (__u32)size, ctx))
			break;
	}
	ring__release(r);
	return (int)n;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Poll head for up to spin_ns before sleeping: a producer that publishes in batches is
 * usually microseconds from its next flush, while a futex sleep costs it a wake-up system
 * call and us a scheduler round trip (tens of microseconds on a VM). */
static bool spin_for_data(struct ring *r, __u64 spin_ns)
{
	__u64 until = 0;
	unsigned int i;

	for (;;) {
		for (i = 0; i < 64; i++) {
			if (ring__readable(r))
				return true;
			cpu_relax();
		}
		if (!until)
			until = now_ns() + spin_ns;
		else if (now_ns() >= until)
			return false;
	}
}

int ring__wait(struct ring *r, __u64 timeout_ns)
{
	struct xpu_ring_hdr *hdr = r->hdr;
	struct timespec ts, *tsp = NULL;
	int ready;

	if (ring__readable(r))
		return 1;
	if (!r->hold)
		ring__release(r);
	if (!timeout_ns)
		return 0;
	if (spin_for_data(r, timeout_ns < RING_SPIN_NS ? timeout_ns : RING_SPIN_NS))
		return 1;
	if (timeout_ns != ~0ull) {
		ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
		ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
		tsp = &ts;
	}
	__atomic_store_n(&hdr->consumer_waiting, 1, __ATOMIC_SEQ_CST); /* (D) pairs with (A)+(B) */
	if (!readable(r, __ATOMIC_SEQ_CST)) {
		store_relaxed(&hdr->sleeps, ++r->sleeps);
		/* Returns at once (EAGAIN) if the producer already cleared the word. */
		futex(&hdr->consumer_waiting, FUTEX_WAIT, 1, tsp);
	}
	store_relaxed(&hdr->consumer_waiting, 0);
	ready = ring__readable(r) != 0;
	return ready;
}

void ring__stats(const struct ring *r, struct ring_stats *st)
{
	const struct xpu_ring_hdr *hdr = r->hdr;

	memset(st, 0, sizeof(*st));
	st->capacity = r->capacity;
	st->max_record = r->max_record;
	st->head = load_relaxed(&hdr->head);
	st->tail = load_relaxed(&hdr->tail);
	st->produced = load_relaxed(&hdr->produced);
	st->produced_bytes = load_relaxed(&hdr->produced_bytes);
	st->lost_full = load_relaxed(&hdr->lost_full);
	st->lost_too_big = load_relaxed(&hdr->lost_too_big);
	st->reported = load_relaxed(&hdr->reported_full) + load_relaxed(&hdr->reported_too_big);
	st->loss_records = load_relaxed(&hdr->loss_records);
	st->wakeups = load_relaxed(&hdr->wakeups);
	st->consumed = load_relaxed(&hdr->consumed);
	st->consumed_bytes = load_relaxed(&hdr->consumed_bytes);
	st->corrupt = load_relaxed(&hdr->corrupt);
	st->skipped_bytes = load_relaxed(&hdr->skipped_bytes);
	st->sleeps = load_relaxed(&hdr->sleeps);
	st->producer_pid = load_relaxed(&hdr->producer_pid);
	st->consumer_pid = load_relaxed(&hdr->consumer_pid);
}
