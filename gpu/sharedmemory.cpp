#include "sharedmemory.h"

#include <util/parallel.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <stdexcept>
#include <sys/mman.h>
#include <unistd.h>

namespace ks {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& name)
{
    throw std::runtime_error("shared memory for " + name + ": " + what + ": " + std::strerror(errno));
}

int createSized(std::size_t bytes, const std::string& name)
{
    const int fd = ::memfd_create(("ksearch-" + name).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        fail("memfd_create", name);
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
        ::close(fd);
        fail("cannot size to " + std::to_string(bytes) + " bytes", name);
    }
    return fd;
}

void* mapShared(int fd, std::size_t bytes, int protection, const std::string& name)
{
    if (bytes == 0)
        return nullptr;
    void* map = ::mmap(nullptr, bytes, protection, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        ::close(fd);
        fail("cannot map", name);
    }
    return map;
}

void seal(int fd, int seals, const std::string& name)
{
    if (::fcntl(fd, F_ADD_SEALS, seals | F_SEAL_SEAL) != 0) {
        ::close(fd);
        fail("cannot seal", name);
    }
}

// Contents final: no write(), no new writable mapping, no resizing. F_SEAL_WRITE is refused
// (EBUSY) while any writable mapping exists, and a child forked by another thread between our
// mmap and its MADV_DONTFORK holds one until it execs; F_SEAL_FUTURE_WRITE then refuses the same
// to everyone from now on, which is what keeps a candidate from changing its inputs.
void sealContents(int fd, const std::string& name)
{
    const int fixedSize = F_SEAL_SHRINK | F_SEAL_GROW;
    if (::fcntl(fd, F_ADD_SEALS, fixedSize | F_SEAL_WRITE | F_SEAL_SEAL) == 0)
        return;
    if (errno != EBUSY) {
        ::close(fd);
        fail("cannot seal", name);
    }
    seal(fd, fixedSize | F_SEAL_FUTURE_WRITE, name);
}

// Marks are 8-byte words, or one 4-byte word in a 4- to 7-byte buffer; smaller buffers get none
// (an honest one-byte output would match a random mark too often).
std::size_t markBytes(std::size_t size)
{
    return size >= 8 ? 8 : size >= 4 ? 4 : 0;
}

} // namespace

SharedMemory::SharedMemory(int fd, std::size_t size, void* map, bool writable)
    : m_fd(fd)
    , m_size(size)
    , m_map(map)
    , m_writable(writable)
{
}

SharedMemory::~SharedMemory()
{
    if (m_map)
        ::munmap(m_map, m_size);
    if (m_fd >= 0)
        ::close(m_fd);
}

std::shared_ptr<SharedMemory> SharedMemory::sealedCopy(std::span<const std::byte> data, const std::string& name)
{
    return sealedFill(data.size(), name, [&](std::span<std::byte> out) {
        parallelChunks(
            data.size(),
            [&](std::size_t begin, std::size_t end, std::size_t) {
                std::memcpy(out.data() + begin, data.data() + begin, end - begin);
            },
            std::size_t {1} << 24);
    });
}

std::shared_ptr<SharedMemory> SharedMemory::sealedFill(
    std::size_t bytes, const std::string& name, const std::function<void(std::span<std::byte>)>& fill)
{
    const int fd = createSized(bytes, name);
    if (bytes > 0) {
        void* map = mapShared(fd, bytes, PROT_READ | PROT_WRITE, name);
        // A process forked meanwhile by another thread (an evaluator starting its compiler or
        // runner) would hold a copy of this writable mapping until it execs, and the write seal
        // below is refused while any exists: keep the mapping out of children.
        ::madvise(map, bytes, MADV_DONTFORK);
        try {
            fill({static_cast<std::byte*>(map), bytes});
        } catch (...) {
            ::munmap(map, bytes);
            ::close(fd);
            throw;
        }
        // The write seal is refused while a writable mapping exists.
        ::munmap(map, bytes);
    }
    sealContents(fd, name);
    return std::shared_ptr<SharedMemory>(new SharedMemory(fd, bytes, mapShared(fd, bytes, PROT_READ, name), false));
}

std::shared_ptr<SharedMemory> SharedMemory::writable(std::size_t bytes, const std::string& name)
{
    const int fd = createSized(bytes, name);
    seal(fd, F_SEAL_SHRINK | F_SEAL_GROW, name);
    return std::shared_ptr<SharedMemory>(
        new SharedMemory(fd, bytes, mapShared(fd, bytes, PROT_READ | PROT_WRITE, name), true));
}

void SharedMemory::plantMarks(std::uint64_t seed)
{
    m_marks.clear();
    const std::size_t word = markBytes(m_size);
    if (!m_writable || word == 0)
        return;
    // Up to one mark per 4 KiB page, at most 4096: the runner overwrites whole buffers, so a few
    // thousand words catch a skipped write with certainty at a negligible cost.
    const std::size_t markSlots = m_size / word;
    const std::size_t count = std::min<std::size_t>(4096, std::max<std::size_t>(1, m_size / 4096));
    std::mt19937_64 random(seed);
    auto* base = static_cast<std::byte*>(m_map);
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t offset = (random() % markSlots) * word;
        const std::uint64_t value = random();
        std::memcpy(base + offset, &value, word);
        m_marks.emplace_back(offset, value);
    }
}

bool SharedMemory::marksSurvive() const
{
    const std::size_t word = markBytes(m_size);
    // A later mark may land on an earlier one's place: only the last value written there counts.
    std::map<std::size_t, std::uint64_t> last;
    for (const auto& [offset, value] : m_marks)
        last[offset] = value;
    const auto* base = static_cast<const std::byte*>(m_map);
    for (const auto& [offset, value] : last)
        if (std::memcmp(base + offset, &value, word) == 0)
            return true;
    return false;
}

TensorView SharedTensor::view() const
{
    return {name, dtype, shape, memory ? memory->bytes() : std::span<const std::byte> {}};
}

HostTensor SharedTensor::copy() const
{
    const auto bytes = memory ? memory->bytes() : std::span<const std::byte> {};
    return {name, dtype, shape, scalar, {bytes.begin(), bytes.end()}};
}

SharedTensor shareTensor(const HostTensor& t)
{
    return {t.name, t.dtype, t.shape, t.scalar, SharedMemory::sealedCopy(t.data, t.name)};
}

std::vector<SharedTensor> shareTensors(const std::vector<HostTensor>& tensors)
{
    std::vector<SharedTensor> out;
    out.reserve(tensors.size());
    for (const auto& t : tensors)
        out.push_back(shareTensor(t));
    return out;
}

std::vector<SharedTensor> generateSharedInputs(const InputGenerator& gen, std::uint32_t trial, SharedPools* pools)
{
    std::vector<SharedTensor> out;
    for (const auto& spec : gen.definition().inputs) {
        SharedTensor t {spec.name, spec.dtype, gen.shapeOf(spec), spec.isScalar(), nullptr};
        const std::string pool = pools ? gen.poolKey(spec, trial) : std::string();
        const auto made = pool.empty() ? SharedPools::iterator {} : pools->find(pool);
        if (!pool.empty() && made != pools->end()) {
            t.memory = made->second;
        } else {
            t.memory = SharedMemory::sealedFill(gen.byteSize(spec), spec.name,
                [&](std::span<std::byte> bytes) { gen.generateInto(spec, trial, bytes); });
            if (!pool.empty())
                pools->emplace(pool, t.memory);
        }
        out.push_back(std::move(t));
    }
    return out;
}

std::shared_ptr<SharedMemory> SharedBufferPool::output(const std::string& key, std::size_t bytes)
{
    auto& slot = m_buffers[key];
    if (!slot || slot->size() != bytes)
        slot = SharedMemory::writable(bytes, key);
    return slot;
}

} // namespace ks
