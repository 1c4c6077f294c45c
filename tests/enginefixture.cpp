#include "enginefixture.h"

#include "testsupport.h"

#include <QSignalSpy>

#include <runnerclient.h>

namespace ks::test {

namespace fs = std::filesystem;

EngineFixture::EngineFixture(const fs::path& root)
    : m_root(root)
    , m_task(root / "scale")
{
    writeScaleTask(m_task, {4096, 8192}, 8);
}

SearchSettings EngineFixture::settings(int budget, int k, StrategyKind strategy)
{
    SearchSettings s;
    s.strategy = strategy;
    s.budget = budget;
    s.stagnation = k;
    // The scripted programs differ by 4x or more; repeated timings of one program on a shared host
    // drift by up to 1.6x between processes, so only a doubling counts as progress here.
    s.minImprovement = 1.0;
    return s;
}

SessionConfig EngineFixture::config(SearchSettings settings) const
{
    SessionConfig c;
    c.taskName = "scale";
    c.taskDir = m_task;
    c.backend = "host";
    c.settings = settings;
    c.planner.provider = QStringLiteral("command");
    c.planner.command = fakeLlmCommand();
    c.planner.model = QStringLiteral("gpt-5.2"); // priced, so dollars are counted
    c.coder = c.planner;
    c.created = "2026-12-02T00:00:00Z";
    c.version = "test";
    return c;
}

RunOptions EngineFixture::options() const
{
    RunOptions o;
    o.benchSeconds = 0.03;
    o.compileCache = m_root / "compile-cache";
    o.localEvaluators = m_evaluators;
    o.lanes = m_lanes;
    return o;
}

EngineFixture::Outcome EngineFixture::drive(SearchRun& run)
{
    Outcome o;
    QSignalSpy finished(&run.engine(), &SearchEngine::finished);
    QSignalSpy halted(&run.engine(), &SearchEngine::halted);
    run.start(false);
    for (int waited = 0; finished.isEmpty() && halted.isEmpty() && waited < 600; ++waited)
        finished.wait(1000);
    if (!finished.isEmpty())
        o.finished = finished.at(0).at(0).toString();
    if (!halted.isEmpty())
        o.halted = halted.at(0).at(0).toString();
    o.state = run.engine().state();
    std::string error;
    if (auto events = run.session().readJournal(error))
        o.events = *events;
    return o;
}

EngineFixture::Outcome EngineFixture::run(const fs::path& dir, const SearchSettings& settings, const std::string& mode)
{
    qputenv("KS_FAKE_LLM_MODE", QByteArray::fromStdString(mode));
    std::string error;
    auto r = SearchRun::create(dir, config(settings), options(), error);
    if (!r) {
        Outcome o;
        o.halted = QString::fromStdString(error);
        return o;
    }
    return drive(*r);
}

EngineFixture::Outcome EngineFixture::resume(const fs::path& dir, const std::string& mode)
{
    qputenv("KS_FAKE_LLM_MODE", QByteArray::fromStdString(mode));
    std::string error;
    auto r = SearchRun::resume(dir, options(), error);
    if (!r) {
        Outcome o;
        o.halted = QString::fromStdString(error);
        return o;
    }
    return drive(*r);
}

fs::path writeRunnerWithoutDevice(const fs::path& script, const fs::path& flag, bool once)
{
    const std::string real = runnerPath().string(); // before the test points KSEARCH_RUNNER here
    writeText(script,
        "#!/bin/sh\ncase \" $* \" in\n*\" --warm \"*)\n    if [ -e '" + flag.string() + "' ]; then\n"
            + (once ? "        rm -f '" + flag.string() + "'\n" : std::string())
            + "        echo 'no CUDA-capable device is detected' >&2\n        exit 3\n    fi ;;\nesac\nexec '" + real
            + "' \"$@\"\n");
    fs::permissions(script, fs::perms::owner_all);
    return script;
}

std::vector<std::string> eventSignature(const std::vector<nlohmann::json>& events)
{
    std::vector<std::string> out;
    for (const auto& e : events) {
        const std::string type = e.value("type", std::string());
        std::string line = type;
        if (e.contains("node") && e["node"].is_string())
            line += " " + e["node"].get<std::string>();
        if (type == "evaluation")
            line += " " + e["evaluation"].value("status", std::string());
        if (type == "tree_edit")
            for (const auto& id : e.value("inserted", std::vector<std::string>()))
                line += " +" + id;
        if (type == "exchange")
            line += " " + e.value("role", std::string()) + " " + e.value("purpose", std::string());
        if (type != "run_started")
            out.push_back(line);
    }
    return out;
}

} // namespace ks::test
