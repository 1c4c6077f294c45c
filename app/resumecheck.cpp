#include "resumecheck.h"

#include <search/searchsettings.h>
#include <session/session.h>
#include <task/language.h>

#include <QJsonDocument>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ks::cli {
namespace {

QString quoted(const std::string& v)
{
    return u'\'' + QString::fromStdString(v) + u'\'';
}

QString conflict(const QCommandLineOption& flag, const QString& session, const QString& given)
{
    return QStringLiteral("--%1: the session was started with %2, the command line says %3 (a resumed session "
                          "keeps its settings: give the session's value or leave the flag out)")
        .arg(flag.names().first(), session, given);
}

bool sameTask(const QString& given, const SessionConfig& s)
{
    if (given.toStdString() == s.taskName)
        return true;
    std::error_code ec;
    return std::filesystem::equivalent(given.toStdString(), s.taskDir, ec);
}

QString compact(const LlmRoleConfig& c)
{
    return QString::fromUtf8(QJsonDocument(c.toJson()).toJson(QJsonDocument::Compact));
}

} // namespace

std::optional<QString> resumeConflict(const QCommandLineParser& parser, const RunFlags& f, const LlmOptions& planner,
    const LlmOptions& coder, const SessionConfig& session)
{
    const SearchSettings& s = session.settings;
    auto given = [&](const QCommandLineOption& o) { return parser.value(o); };
    if (parser.isSet(f.task) && !sameTask(given(f.task), session))
        return conflict(f.task,
            quoted(session.taskName) + u" (" + QString::fromStdString(session.taskDir.string()) + u')',
            u'\'' + given(f.task) + u'\'');
    if (parser.isSet(f.strategy) && parseStrategy(given(f.strategy).toStdString()) != s.strategy)
        return conflict(f.strategy, quoted(std::string(strategyName(s.strategy))), u'\'' + given(f.strategy) + u'\'');
    if (parser.isSet(f.backend) && given(f.backend).toStdString() != session.backend)
        return conflict(f.backend, quoted(session.backend), u'\'' + given(f.backend) + u'\'');
    if (parser.isSet(f.language)
        && parseLanguage(given(f.language).toStdString()) != std::optional(session.candidateLanguage()))
        return conflict(f.language, quoted(std::string(languageName(session.candidateLanguage()))),
            u'\'' + given(f.language) + u'\'');
    for (const auto& [flag, on] : {std::pair {&f.frozen, s.frozenValues}, std::pair {&f.flat, s.flat}})
        if (parser.isSet(*flag) && !on)
            return conflict(*flag, u"it off"_qs, u"on"_qs);
    const std::pair<const QCommandLineOption*, double> numbers[] = {{&f.islands, s.islands},
        {&f.randomSeed, static_cast<double>(s.randomSeed)}, {&f.target, s.targetScore}, {&f.maxTime, s.maxSeconds},
        {&f.maxDollars, s.maxDollars}, {&f.minImprovement, s.minImprovement}};
    for (const auto& [flag, value] : numbers) {
        bool ok = false;
        if (parser.isSet(*flag) && (given(*flag).toDouble(&ok) != value || !ok))
            return conflict(*flag, QString::number(value), u'\'' + given(*flag) + u'\'');
    }
    if (parser.isSet(f.label) && given(f.label).toStdString() != session.label)
        return conflict(f.label, quoted(session.label), u'\'' + given(f.label) + u'\'');
    if (parser.isSet(f.seed)) {
        std::ifstream in(given(f.seed).toStdString());
        std::stringstream text;
        text << in.rdbuf();
        if (!in || programHash(text.str()) != session.seedProgram)
            return conflict(f.seed,
                session.seedProgram.empty() ? u"no seed program"_qs : u"program "_qs + quoted(session.seedProgram),
                u'\'' + given(f.seed) + u"' (program " + QString::fromStdString(programHash(text.str())) + u')');
    }
    if (planner.isSet(parser) || coder.isSet(parser)) {
        QString error;
        const auto p = planner.read(parser, {}, &error);
        const auto c = p ? coder.read(parser, *p, &error) : std::nullopt;
        if (!p || !c)
            return error;
        if (p->toJson() != session.planner.toJson())
            return QStringLiteral("the planner's provider flags: the session was started with %1, the command line "
                                  "gives %2 (a resumed session keeps its LLM settings)")
                .arg(compact(session.planner), compact(*p));
        if (c->toJson() != session.coder.toJson())
            return QStringLiteral("the coder's provider flags: the session was started with %1, the command line "
                                  "gives %2 (a resumed session keeps its LLM settings)")
                .arg(compact(session.coder), compact(*c));
    }
    return std::nullopt;
}

} // namespace ks::cli
