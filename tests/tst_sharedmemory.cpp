#include "testmain.h"
#include "testsupport.h"

#include <task/inputgenerator.h>
#include <task/task.h>

#include <QTemporaryDir>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sharedmemory.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace ks;

class TestSharedMemory : public QObject
{
    Q_OBJECT
private slots:
    void sealedCopyRefusesChanges();
    void writableRefusesResizing();
    void marksSurviveOnlyWithoutWrites_data();
    void marksSurviveOnlyWithoutWrites();
    void sealedFillSealsWhatItWrote();
    void inputsGeneratedInPlaceAndPoolsShared();
    void sealsWhileAnotherThreadForks();
};

void TestSharedMemory::sealedCopyRefusesChanges()
{
    std::vector<std::byte> data(10000, std::byte {7});
    const auto m = SharedMemory::sealedCopy(data, "x");
    QCOMPARE(m->size(), data.size());
    const char zero = 0;
    QCOMPARE(::pwrite(m->fd(), &zero, 1, 0), ssize_t {-1});
    QCOMPARE(errno, EPERM);
    QCOMPARE(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd(), 0), MAP_FAILED);
    QCOMPARE(::ftruncate(m->fd(), 0), -1);
    QVERIFY(std::memcmp(m->bytes().data(), data.data(), data.size()) == 0);
    QVERIFY(::fcntl(m->fd(), F_GETFD) & FD_CLOEXEC); // no child sees it unless handed it
}

void TestSharedMemory::writableRefusesResizing()
{
    const auto m = SharedMemory::writable(4096, "y");
    const char one = 1;
    QCOMPARE(::pwrite(m->fd(), &one, 1, 100), ssize_t {1});
    QCOMPARE(static_cast<char>(m->bytes()[100]), one); // the parent's mapping sees writes at once
    QCOMPARE(::ftruncate(m->fd(), 0), -1);
    QCOMPARE(::ftruncate(m->fd(), 8192), -1);
}

void TestSharedMemory::marksSurviveOnlyWithoutWrites_data()
{
    QTest::addColumn<int>("bytes");
    QTest::addColumn<bool>("marked"); // buffers under 4 bytes carry no marks
    QTest::newRow("2 bytes") << 2 << false;
    QTest::newRow("4 bytes") << 4 << true;
    QTest::newRow("8 bytes") << 8 << true;
    QTest::newRow("1 MiB") << (1 << 20) << true;
}

void TestSharedMemory::marksSurviveOnlyWithoutWrites()
{
    QFETCH(int, bytes);
    QFETCH(bool, marked);
    const auto m = SharedMemory::writable(static_cast<std::size_t>(bytes), "z");
    m->plantMarks(1234);
    QCOMPARE(m->marksSurvive(), marked); // nobody wrote
    // Rewriting the whole buffer removes every mark; writing half of it leaves the other half's.
    std::vector<char> ones(static_cast<std::size_t>(bytes), 1);
    QCOMPARE(::pwrite(m->fd(), ones.data(), ones.size(), 0), static_cast<ssize_t>(bytes));
    QVERIFY(!m->marksSurvive());
    m->plantMarks(99);
    QCOMPARE(::pwrite(m->fd(), ones.data(), ones.size() / 2, 0), static_cast<ssize_t>(bytes / 2));
    if (bytes >= (1 << 20))
        QVERIFY(m->marksSurvive()); // half written: thousands of marks in the other half
}

void TestSharedMemory::sealedFillSealsWhatItWrote()
{
    const auto m = SharedMemory::sealedFill(5000, "z", [](std::span<std::byte> out) {
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = static_cast<std::byte>(i % 251);
    });
    QCOMPARE(m->size(), std::size_t {5000});
    QCOMPARE(m->bytes()[4999], static_cast<std::byte>(4999 % 251));
    const char zero = 0;
    QCOMPARE(::pwrite(m->fd(), &zero, 1, 0), ssize_t {-1}); // sealed like a copy
    QCOMPARE(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd(), 0), MAP_FAILED);
    // A fill that fails leaves nothing behind and says why.
    QVERIFY_THROWS_EXCEPTION(std::runtime_error,
        SharedMemory::sealedFill(64, "w", [](std::span<std::byte>) { throw std::runtime_error("no"); }));
}

// Inputs made in place are the generator's bytes; a 64 MiB KV pool is made once per trial for
// every workload of the same shape, and smaller inputs stay per workload.
void TestSharedMemory::inputsGeneratedInPlaceAndPoolsShared()
{
    QTemporaryDir dir;
    const std::filesystem::path root = std::filesystem::path(dir.path().toStdString()) / "pooled";
    test::writeText(root / "definition.json", R"J({"name": "pooled", "op_type": "test",
  "axes": {"pages": {"type": "var"}, "width": {"type": "const", "value": 4096}, "n": {"type": "var"}},
  "inputs": {"pool": {"shape": ["pages", "width"], "dtype": "bfloat16"},
             "q": {"shape": ["n"], "dtype": "float32"}},
  "outputs": {"out": {"shape": ["n"], "dtype": "float32"}}})J");
    auto line = [](const char* uuid, int n) {
        return std::string(R"({"definition": "pooled", "workload": {"uuid": ")") + uuid
            + R"(", "axes": {"pages": 8192, "n": )" + std::to_string(n)
            + R"(}, "inputs": {"pool": {"type": "random"}, "q": {"type": "random"}}}})" + "\n";
    };
    test::writeText(root / "workloads.jsonl", line("a", 16) + line("b", 16));
    test::writeText(root / "reference.cpp", "// not compiled\n");
    const auto loaded = loadTask(root);
    QVERIFY2(loaded.task, loaded.diagnostics.formatAll().c_str());
    const Task& task = *loaded.task;
    const InputGenerator a(task.definition, task.workloads[0], 42), b(task.definition, task.workloads[1], 42);

    SharedPools pools;
    const auto a0 = generateSharedInputs(a, 0, &pools);
    const auto b0 = generateSharedInputs(b, 0, &pools);
    const auto a1 = generateSharedInputs(a, 1, &pools);
    QCOMPARE(pools.size(), std::size_t {2}); // the pool of trial 0 and of trial 1
    QCOMPARE(a0[0].memory, b0[0].memory); // one pool for both workloads
    QVERIFY(a0[0].memory != a1[0].memory); // a new trial draws anew
    QVERIFY(a0[1].memory != b0[1].memory); // q (64 bytes) is each workload's own
    QVERIFY(std::memcmp(a0[1].memory->bytes().data(), b0[1].memory->bytes().data(), 64) != 0);

    // Byte for byte what the generator makes on the host, without pools and with.
    const auto host = a.generateInputs(0);
    const auto alone = generateSharedInputs(a, 0);
    for (std::size_t i = 0; i < host.size(); ++i) {
        QCOMPARE(a0[i].memory->size(), host[i].data.size());
        QVERIFY(std::memcmp(a0[i].memory->bytes().data(), host[i].data.data(), host[i].data.size()) == 0);
        QVERIFY(std::memcmp(alone[i].memory->bytes().data(), host[i].data.data(), host[i].data.size()) == 0);
    }
}

KS_TEST_MAIN_CORE(TestSharedMemory)
// Parallel evaluators fork compilers and runners from other threads while one fills inputs: a
// child that has not exec'd yet must not hold a writable copy of the mapping, or the write seal
// fails with EBUSY (seen as RUNTIME_ERROR "cannot seal" in parallel searches).
void TestSharedMemory::sealsWhileAnotherThreadForks()
{
    std::atomic<bool> stop {false};
    std::thread forker([&] {
        while (!stop) {
            const pid_t pid = ::fork();
            if (pid == 0) {
                ::usleep(3000); // a child between fork and exec, for longer than usual
                ::_exit(0);
            }
            if (pid > 0)
                ::waitpid(pid, nullptr, 0);
        }
    });
    int sealed = 0;
    std::string failure;
    for (int i = 0; i < 200 && failure.empty(); ++i) {
        try {
            auto m = SharedMemory::sealedFill(
                1 << 16, "x", [](std::span<std::byte> out) { std::memset(out.data(), 7, out.size()); });
            // Whichever seal it got, nobody can change the contents from now on.
            const char byte = 1;
            void* writable = ::mmap(nullptr, m->size(), PROT_READ | PROT_WRITE, MAP_SHARED, m->fd(), 0);
            if (writable != MAP_FAILED)
                failure = "a writable mapping was allowed";
            else if (::pwrite(m->fd(), &byte, 1, 0) != -1)
                failure = "a write was allowed";
            sealed += m->size() == (1 << 16) ? 1 : 0;
        } catch (const std::exception& e) {
            failure = e.what();
        }
    }
    stop = true;
    forker.join();
    QVERIFY2(failure.empty(), failure.c_str());
    QCOMPARE(sealed, 200);
}

#include "tst_sharedmemory.moc"
