// How fast the parent compares a candidate's outputs with the expected ones (part of every
// evaluation's overhead: 0.29-0.37 s for rmsnorm on the H200 machine, docs/perf.md).
//
//   ksearch_bench_compare [MILLIONS_OF_ELEMENTS]
//
// Prints, per dtype, the time of a whole comparison and of a sampled one (every 8th block), on
// the machine's threads, as a table; the figures go to docs/perf.md with the machine and date.

#include <task/comparison.h>

#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

std::vector<std::byte> values(ks::DType dtype, std::size_t n, std::uint32_t seed, float noise)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::mt19937 base(7); // the same underlying values for expected and actual
    std::vector<std::byte> out(n * ks::dtypeSize(dtype));
    for (std::size_t i = 0; i < n; ++i) {
        const float v = dist(base) + noise * dist(gen);
        if (dtype == ks::DType::Float32) {
            std::memcpy(out.data() + 4 * i, &v, 4);
        } else {
            const auto bits = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16);
            std::memcpy(out.data() + 2 * i, &bits, 2);
        }
    }
    return out;
}

double secondsOf(const auto& f, int repeats)
{
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

} // namespace

int main(int argc, char** argv)
{
    const std::size_t n = static_cast<std::size_t>((argc > 1 ? std::atof(argv[1]) : 64.0) * 1e6);
    std::printf("%zu elements, %u threads, best of 3\n\n", n, std::max(1U, std::thread::hardware_concurrency()));
    std::printf("| dtype | compared | seconds | ns per element | GB/s read (both tensors) | passed |\n");
    std::printf("|---|---|---:|---:|---:|---|\n");
    const std::vector<std::int64_t> shape {static_cast<std::int64_t>(n)};
    for (const ks::DType dtype : {ks::DType::BFloat16, ks::DType::Float32}) {
        const auto expected = values(dtype, n, 1, 0.0f);
        const auto actual = values(dtype, n, 2, 1e-3f);
        const ks::TensorView e {"out", dtype, shape, expected};
        const ks::TensorView a {"out", dtype, shape, actual};
        for (const unsigned every : {1U, 8U}) {
            ks::OutputComparison c;
            const double s = secondsOf([&] { c = ks::compareOutput(a, e, {}, {every, 42}); }, 3);
            const double bytes = 2.0 * static_cast<double>(c.total * ks::dtypeSize(dtype));
            std::printf("| %s | %s | %.4f | %.3f | %.2f | %s |\n", ks::dtypeName(dtype).data(),
                every == 1 ? "all" : "every 8th block", s, 1e9 * s / static_cast<double>(c.total), bytes / s / 1e9,
                c.passed ? "yes" : "no");
        }
    }
    return 0;
}
