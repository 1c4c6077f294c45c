#pragma once

#include <task/language.h>
#include <task/sanitizerreport.h>

#include <QObject>

#include <filesystem>
#include <memory>
#include <string>

class QTemporaryDir;
class QThread;

namespace ks::ui {

// One attempt's program under compute-sanitizer, off the window's thread (issue #15 point 7): a
// fresh evaluator of the session's task compiles and prepares it as `ksearch eval --sanitize`
// does, and the report comes back to the window's thread as a value. One run at a time.
class SanitizerRun : public QObject
{
    Q_OBJECT
public:
    struct Request {
        std::filesystem::path taskDir;
        std::string backend; // the session's: "cuda" or "host"
        Language language = Language::Cuda;
        std::string source; // the program's text
        SanitizerTool tool = SanitizerTool::Memcheck;
        int attempt = -1;
    };

    explicit SanitizerRun(QObject* parent = nullptr);
    ~SanitizerRun() override; // waits for a run in progress: the tool's own limit ends it

    [[nodiscard]] bool busy() const { return m_thread != nullptr; }
    // False (and nothing started) while another run is in progress.
    bool start(const Request& request);

    // The run itself, blocking: what the thread does (and what tests can call directly).
    static SanitizerReport run(const Request& request, const std::filesystem::path& workDir);

signals:
    void finished(int attempt, const ks::SanitizerReport& report);

private:
    QThread* m_thread = nullptr;
    std::unique_ptr<QTemporaryDir> m_scratch;
};

} // namespace ks::ui
