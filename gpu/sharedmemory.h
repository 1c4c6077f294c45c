#pragma once

#include <task/hosttensor.h>
#include <task/inputgenerator.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ks {

// An anonymous shared-memory file (memfd) that a runner process inherits by descriptor. Sealed
// against resizing, so a candidate cannot make the parent's mapping fault by truncating it;
// input copies are sealed against writing too, so the pristine inputs the parent hands out stay
// pristine whatever a candidate does. The descriptor is close-on-exec: only a runner that is
// handed it explicitly (SubprocessRequest::inheritedFds) sees it.
class SharedMemory
{
public:
    // A read-only copy of data. Throws std::runtime_error when the system refuses.
    static std::shared_ptr<SharedMemory> sealedCopy(std::span<const std::byte> data, const std::string& name);
    // A read-only buffer of `bytes` whose contents `fill` writes in place before the seal (no
    // host copy on the way; `fill` may use every core). Exceptions from `fill` pass through.
    static std::shared_ptr<SharedMemory> sealedFill(
        std::size_t bytes, const std::string& name, const std::function<void(std::span<std::byte>)>& fill);
    // A zero-filled buffer of this size for a runner to write.
    static std::shared_ptr<SharedMemory> writable(std::size_t bytes, const std::string& name);

    SharedMemory(const SharedMemory&) = delete;
    SharedMemory& operator=(const SharedMemory&) = delete;
    ~SharedMemory();

    int fd() const { return m_fd; }
    std::size_t size() const { return m_size; }
    // The parent's view.
    std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(m_map), m_map ? m_size : 0}; }

    // Writable buffers: before a job, random words at secret places; after it, whether any is
    // still there. A runner that reports success without writing its outputs would otherwise
    // leave an earlier job's (correct) results in a pooled buffer for the parent to judge.
    void plantMarks(std::uint64_t seed);
    bool marksSurvive() const;

private:
    SharedMemory(int fd, std::size_t size, void* map, bool writable);
    int m_fd = -1;
    std::size_t m_size = 0;
    void* m_map = nullptr;
    bool m_writable = false;
    std::vector<std::pair<std::size_t, std::uint64_t>> m_marks; // offset, value
};

// A tensor whose bytes live in shared memory: an input handed to runners (a sealed copy), or an
// output a runner wrote. Copies share the memory.
struct SharedTensor {
    std::string name;
    DType dtype = DType::Float32;
    std::vector<std::int64_t> shape;
    bool scalar = false;
    std::shared_ptr<const SharedMemory> memory;

    TensorView view() const;
    HostTensor copy() const;
};

// Sealed shared copies of host tensors (throws std::runtime_error when the system refuses).
SharedTensor shareTensor(const HostTensor& t);
std::vector<SharedTensor> shareTensors(const std::vector<HostTensor>& tensors);
// Shared memory of the inputs that every workload of a search shares (InputGenerator::poolKey).
using SharedPools = std::map<std::string, std::shared_ptr<const SharedMemory>>;

// A workload's inputs generated straight into sealed shared memory (the same bytes as
// shareTensors(gen.generateInputs(trial)), without the host copies). With `pools`, an input
// whose pool is already there is not made again.
std::vector<SharedTensor> generateSharedInputs(
    const InputGenerator& gen, std::uint32_t trial, SharedPools* pools = nullptr);

// Output buffers by key, made on first use and kept: each is mapped once per search and
// rewritten in place by every candidate's runner, so what a job's outcome shows of a pooled
// output is only valid until the next job on the same pool.
class SharedBufferPool
{
public:
    std::shared_ptr<SharedMemory> output(const std::string& key, std::size_t bytes);
    std::size_t count() const { return m_buffers.size(); }

private:
    std::map<std::string, std::shared_ptr<SharedMemory>> m_buffers;
};

} // namespace ks
