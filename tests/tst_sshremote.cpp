#include "testmain.h"

#include <sshremote.h>

using namespace ks;

// `--remote ssh://...` becomes the ssh command that starts a worker there; a malformed address
// is refused with the part named, and nothing in an address becomes a word of its own for the shell.
class TestSshRemote : public QObject
{
    Q_OBJECT
private slots:
    void addressesBecomeCommands_data();
    void addressesBecomeCommands();
    void malformedAddressesAreNamed_data();
    void malformedAddressesAreNamed();
};

void TestSshRemote::addressesBecomeCommands_data()
{
    QTest::addColumn<QString>("url");
    QTest::addColumn<QString>("ssh");
    QTest::addColumn<QString>("command");
    QTest::newRow("host") << "ssh://gpu-box"
                          << "ssh"
                          << "ssh -o BatchMode=yes gpu-box ksearch worker";
    QTest::newRow("user, port, path") << "ssh://alice@gpu-box.lab:2222/opt/ks/bin/ksearch"
                                      << "ssh"
                                      << "ssh -o BatchMode=yes -p 2222 alice@gpu-box.lab /opt/ks/bin/ksearch worker";
    QTest::newRow("ipv6") << "ssh://[::1]:22"
                          << "ssh"
                          << "ssh -o BatchMode=yes -p 22 ::1 ksearch worker";
    QTest::newRow("ipv6 without port") << "ssh://[::1]"
                                       << "ssh"
                                       << "ssh -o BatchMode=yes ::1 ksearch worker";
    QTest::newRow("plus and tilde in the path") << "ssh://h/~/bin/ksearch+cuda13"
                                                << "ssh"
                                                << "ssh -o BatchMode=yes h /~/bin/ksearch+cuda13 worker";
    QTest::newRow("own ssh command") << "ssh://h"
                                     << "ssh -i /k/id -F /k/config"
                                     << "ssh -i /k/id -F /k/config -o BatchMode=yes h ksearch worker";
}

void TestSshRemote::addressesBecomeCommands()
{
    QFETCH(QString, url);
    QFETCH(QString, ssh);
    QFETCH(QString, command);
    std::string error;
    const auto made = sshWorkerCommand(url.toStdString(), ssh.toStdString(), error);
    QVERIFY2(made, error.c_str());
    QCOMPARE(QString::fromStdString(*made), command);
}

void TestSshRemote::malformedAddressesAreNamed_data()
{
    QTest::addColumn<QString>("url");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("no scheme") << "gpu-box"
                               << "is not an ssh:// address";
    QTest::newRow("other scheme") << "http://gpu-box"
                                  << "is not an ssh:// address";
    QTest::newRow("no host") << "ssh://"
                             << "no host name";
    QTest::newRow("shell in the host") << "ssh://h;reboot"
                                       << "no host name, or one with characters";
    QTest::newRow("host read as an option") << "ssh://-Fevil"
                                            << "no host name, or one with characters";
    QTest::newRow("space in the user") << "ssh://a b@h"
                                       << "the user name 'a b'";
    QTest::newRow("user read as an option") << "ssh://-F@h"
                                            << "the user name '-F'";
    QTest::newRow("port zero") << "ssh://h:0"
                               << "the port '0'";
    QTest::newRow("port too large") << "ssh://h:99999"
                                    << "the port '99999'";
    QTest::newRow("port not a number") << "ssh://h:ssh"
                                       << "the port 'ssh'";
    QTest::newRow("empty port") << "ssh://h:"
                                << "the port ''";
    QTest::newRow("empty port after brackets") << "ssh://[::1]:"
                                               << "the port ''";
    QTest::newRow("bare slash") << "ssh://h/"
                                << "names the remote ksearch executable";
    QTest::newRow("unclosed bracket") << "ssh://[::1"
                                      << "not an IPv6 address";
    // The path passes through two shells: nothing in it may be a shell word or quote.
    QTest::newRow("quote in the path") << "ssh://h/home/o'neil/ksearch"
                                       << "the path '/home/o'neil/ksearch' may hold";
    QTest::newRow("command in the path") << "ssh://h/opt/ks;reboot"
                                         << "the path '/opt/ks;reboot' may hold";
    QTest::newRow("space in the path") << "ssh://h/opt/my ks/ksearch"
                                       << "the path '/opt/my ks/ksearch' may hold";
    QTest::newRow("substitution in the path") << "ssh://h/opt/$(id)/ksearch"
                                              << "may hold";
}

void TestSshRemote::malformedAddressesAreNamed()
{
    QFETCH(QString, url);
    QFETCH(QString, fragment);
    std::string error;
    QVERIFY(!sshWorkerCommand(url.toStdString(), "ssh", error));
    QVERIFY2(QString::fromStdString(error).contains(fragment), error.c_str());
    QVERIFY2(QString::fromStdString(error).contains(url), error.c_str());
}

KS_TEST_MAIN_CORE(TestSshRemote)
#include "tst_sshremote.moc"
