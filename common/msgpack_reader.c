// SPDX-License-Identifier: MIT
/*
 * The one read of common/msgpack_reader.h that is not inline: skipping a value of any type.
 * It runs for keys a reader does not know (a newer writer's), so it is rare and may cost a
 * call.
 */
#include "common/msgpack_reader.h"

/*
 * Instead of recursing, pending[level] counts the elements still to skip in each open
 * container (pending[0]: the value itself); levels never exceed max_depth - depth + 1, which
 * the clamp to MP_READER_DEPTH_MAX in mp_reader__init() keeps inside the array. Each turn of
 * the loop consumes at least one byte or closes a level, so the time is linear in the span.
 */
int mp_reader__skip(struct mp_reader *r, __u32 depth)
{
	__u64 pending[MP_READER_DEPTH_MAX + 1];
	__u32 top = 0;

	pending[0] = 1;
	for (;;) {
		const __u8 *at = r->p;
		__u64 items = 0, body = 0;
		bool container = false, str = false;
		size_t hdr = 1, width = 0;
		__u8 b;

		if (!pending[top]) {
			if (!top)
				return 0;
			top--;
			continue;
		}
		pending[top]--;
		if (!mp_reader__left(r))
			return mp_reader__fail(r, at, "truncated");
		b = *at;
		if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
			r->p++; /* fixint, nil, false, true */
			continue;
		}
		if ((b & 0xe0) == 0xa0) {
			body = b & 0x1f;
			str = true;
		} else if ((b & 0xf0) == 0x90) {
			items = b & 0x0f;
			container = true;
		} else if ((b & 0xf0) == 0x80) {
			items = 2u * (b & 0x0f);
			container = true;
		} else {
			switch (b) {
			case 0xc4: /* bin8, bin16, bin32: length, bytes */
			case 0xc5:
			case 0xc6:
				width = (size_t)1 << (b - 0xc4);
				hdr = 1 + width;
				str = true;
				break;
			case 0xc7: /* ext8, ext16, ext32: length, type byte, bytes */
			case 0xc8:
			case 0xc9:
				width = (size_t)1 << (b - 0xc7);
				hdr = 2 + width;
				str = true;
				break;
			case 0xca: /* float32, float64 */
				body = 4;
				break;
			case 0xcb:
				body = 8;
				break;
			case 0xcc: /* uint8..uint64, int8..int64 */
			case 0xcd:
			case 0xce:
			case 0xcf:
			case 0xd0:
			case 0xd1:
			case 0xd2:
			case 0xd3:
				body = (__u64)1 << (b & 3);
				break;
			case 0xd4: /* fixext1..fixext16: type byte, 1..16 bytes */
			case 0xd5:
			case 0xd6:
			case 0xd7:
			case 0xd8:
				hdr = 2;
				body = (__u64)1 << (b - 0xd4);
				break;
			case 0xd9: /* str8, str16, str32 */
			case 0xda:
			case 0xdb:
				width = (size_t)1 << (b - 0xd9);
				hdr = 1 + width;
				str = true;
				break;
			case 0xdc: /* array16, array32 */
			case 0xdd:
				width = b == 0xdc ? 2 : 4;
				hdr = 1 + width;
				container = true;
				break;
			case 0xde: /* map16, map32 */
			case 0xdf:
				width = b == 0xde ? 2 : 4;
				hdr = 1 + width;
				container = true;
				break;
			default: /* 0xc1 is the one byte MessagePack never uses */
				return mp_reader__fail(r, at, "reserved type byte 0xc1");
			}
		}
		if (mp_reader__left(r) < hdr)
			return mp_reader__fail(r, at, "truncated");
		if (width) {
			__u64 n = mp_load_be(at + 1, width);

			if (container)
				items = b >= 0xde ? 2 * n : n;
			else
				body = n;
		}
		r->p += hdr;
		if (!container) {
			if (body > mp_reader__left(r))
				return mp_reader__fail(r, at,
						       !str ? "truncated" :
						       b >= 0xd9 || (b & 0xe0) == 0xa0 ?
							      "string longer than the message" :
							      "bin or ext longer than the message");
			r->p += body;
			continue;
		}
		if (depth + top > r->max_depth)
			return mp_reader__fail(r, at, "depth limit");
		if (items > mp_reader__left(r))
			return mp_reader__fail(r, at,
					       b >= 0xde || (b & 0xf0) == 0x80 ?
						       "map longer than the message" :
						       "array longer than the message");
		if (items)
			pending[++top] = items;
	}
}
