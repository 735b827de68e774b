/* cub/cub.cuh (host emulation) — the one CUB call the inference runtime
 * (core/cuda/rn_cuda.cu) makes, DeviceRadixSort::SortPairs, on the host: a
 * stable sort of (key, value) pairs by the key's bits [begin_bit,
 * end_bit), which is what an LSD radix sort over those bits computes.  A
 * call without scratch only asks the scratch size (one byte here). */
#ifndef RN_CUDA_EMU_CUB_H
#define RN_CUDA_EMU_CUB_H

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include <cuda_runtime.h>

namespace cub {

struct DeviceRadixSort {
    template <typename K, typename V>
    static cudaError_t SortPairs(void *tmp, size_t &bytes, const K *kin, K *kout, const V *vin, V *vout, int n,
                                 int begin_bit = 0, int end_bit = (int)sizeof(K) * 8, cudaStream_t = nullptr)
    {
        if (!tmp) {
            bytes = 1;
            return cudaSuccess;
        }
        const int width = end_bit - begin_bit;
        const uint64_t mask = width >= 64 ? ~0ull : ((1ull << width) - 1);
        auto bits = [&](K k) { return ((uint64_t)k >> begin_bit) & mask; };
        std::vector<int> idx(n);
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return bits(kin[a]) < bits(kin[b]); });
        std::vector<K> ks(n);
        std::vector<V> vs(n);
        for (int i = 0; i < n; i++) ks[i] = kin[idx[i]], vs[i] = vin[idx[i]];
        std::copy(ks.begin(), ks.end(), kout);
        std::copy(vs.begin(), vs.end(), vout);
        return cudaSuccess;
    }
};

} // namespace cub

#endif
