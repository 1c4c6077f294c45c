#pragma once

// What the confinement tests of both runners (tst_confinement: compiled candidates,
// tst_pythonconfinement: Python ones) need to provoke an escape for real and to see whether it
// happened: folders on the disk, a HOME of the test's, and the processes a candidate left behind.

#include <QByteArray>
#include <QDir>
#include <QTemporaryDir>
#include <QtGlobal>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace ks::test {

// A folder for a test, made in the test's working directory (the build folder on CI): on the
// disk, neither under /tmp nor in the home folder, so that only the read-only mounts keep a
// confined candidate from writing there.
inline std::unique_ptr<QTemporaryDir> folderOnTheDisk(const char* name)
{
    auto dir = std::make_unique<QTemporaryDir>(
        QDir::currentPath() + QLatin1Char('/') + QLatin1String(name) + QLatin1String("-XXXXXX"));
    return dir->isValid() ? std::move(dir) : nullptr;
}

// Sets HOME, which the runners started from now on inherit, for as long as it lives.
class HomeFolder
{
public:
    explicit HomeFolder(const std::filesystem::path& dir)
        : m_wasSet(qEnvironmentVariableIsSet("HOME"))
        , m_before(qgetenv("HOME"))
    {
        qputenv("HOME", QByteArray::fromStdString(dir.string()));
    }
    ~HomeFolder()
    {
        if (m_wasSet)
            qputenv("HOME", m_before);
        else
            qunsetenv("HOME");
    }
    HomeFolder(const HomeFolder&) = delete;
    HomeFolder& operator=(const HomeFolder&) = delete;

private:
    bool m_wasSet;
    QByteArray m_before;
};

// The processes whose name (comm) is `marker` and that are still alive (zombies are not).
inline std::vector<int> processesNamed(const std::string& marker)
{
    std::vector<int> found;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string pid = entry.path().filename().string();
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream stat(entry.path() / "stat");
        std::string text; // one line: pid (comm) state ...
        std::getline(stat, text);
        const auto open = text.find('('), close = text.rfind(')');
        if (open == std::string::npos || close == std::string::npos || close + 2 >= text.size())
            continue;
        if (text.substr(open + 1, close - open - 1) == marker && text[close + 2] != 'Z' && text[close + 2] != 'X')
            found.push_back(std::stoi(pid));
    }
    return found;
}

} // namespace ks::test
