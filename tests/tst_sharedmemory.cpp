#include "testmain.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sharedmemory.h>
#include <sys/mman.h>
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

KS_TEST_MAIN_CORE(TestSharedMemory)
#include "tst_sharedmemory.moc"
