/* rn_checksum.h — the 64-bit checksum of a model's parameter block.
 *
 * model.bin stores it in its header and traces use it as the model's
 * identity.  It is a hand-written, FNV-1a-style hash over little-endian
 * 64-bit words, run in four independent lanes so it is fast (no serial
 * dependency between adjacent words), finished with MurmurHash3's fmix64.
 * Exact definition (docs/model-format.md repeats it):
 *
 *   P = 0x100000001b3, B = 0xcbf29ce484222325
 *   lane[i] = B + i                                   (i = 0..3)
 *   for word j (bytes 8j..8j+7 little-endian; a final partial word is
 *   zero-padded):  h = lane[j % 4]; h = rotl64((h ^ w_j) * P, 31)
 *   r = B; for i = 0..3: r = (r ^ lane[i]) * P
 *   r ^= nbytes; r = fmix64(r)
 *
 * Every step is a bijection of the lane state, so any change confined to
 * one word always changes the result.
 */
#ifndef RN_CHECKSUM_H
#define RN_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

uint64_t rn_checksum64(const void *data, size_t nbytes);

#endif
