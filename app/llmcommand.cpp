// `ksearch llm ping`: one short exchange with a configured model.

#include "cli.h"
#include "commandsupport.h"
#include "exitcodes.h"
#include "llmoptions.h"

#include <llm/manualprovider.h>
#include <llm/meteredprovider.h>
#include <llm/providerfactory.h>

#include <QEventLoop>
#include <QTextStream>

#include <memory>

namespace ks::cli {

namespace {

int ping(const QStringList& arguments)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Send one short request to a model and report the answer, latency, tokens and cost."));
    const QCommandLineOption help({u"h"_qs, u"help"_qs}, QStringLiteral("Show this help."));
    const QCommandLineOption prices(
        u"prices"_qs, QStringLiteral("price overrides (JSON, same format as the built-in table)"), u"FILE"_qs);
    const QCommandLineOption timeout(
        u"timeout"_qs, QStringLiteral("seconds for the whole call (default 60)"), u"S"_qs, u"60"_qs);
    const QCommandLineOption noStream(u"no-stream"_qs, QStringLiteral("ask for the whole answer at once"));
    parser.addOptions({help, prices, timeout, noStream});
    const LlmOptions llm;
    llm.addTo(parser);
    if (const auto done = parseSubcommand(parser, arguments, u"ksearch llm ping"_qs, out, err))
        return *done;
    QString error;
    auto config = llm.read(parser, {}, &error);
    bool ok = false;
    const int seconds = parser.value(timeout).toInt(&ok);
    if (config && (!ok || seconds <= 0)) {
        error = QStringLiteral("--timeout: '%1' is not a positive number of seconds").arg(parser.value(timeout));
        config.reset();
    }
    if (!config) {
        err << "ksearch llm ping: " << error << "\nTry 'ksearch llm ping --help'.\n";
        return exitcode::InvalidInput;
    }
    config->timeoutSeconds = seconds;
    config->maxRetries = 1; // a health check reports a failing endpoint quickly
    if (config->provider == u"manual") {
        err << "ksearch llm ping: --provider: the manual provider is answered in the window, not here\n";
        return exitcode::InvalidInput;
    }
    const auto table = loadPrices(parser.value(prices), &error);
    if (!table) {
        err << "ksearch llm ping: " << error << "\n";
        return exitcode::InvalidInput;
    }
    ProviderBuild build = makeProvider(*config);
    if (!build.provider) {
        err << "ksearch llm ping: " << build.error << "\n";
        return exitcode::Environment;
    }
    UsageLedger ledger;
    MeteredProvider metered(*build.provider, *table, ledger);
    LlmRequest request = makeRequest(*config, u"ping"_qs,
        {{u"system"_qs, u"You are a health check. Answer in one word."_qs},
            {u"user"_qs, u"Reply with the single word: pong"_qs}});
    request.stream = !parser.isSet(noStream);
    std::unique_ptr<LlmCall> call(metered.send(request));
    LlmResult result;
    QEventLoop loop;
    QObject::connect(call.get(), &LlmCall::finished, &loop, [&](const LlmResult& r) {
        result = r;
        loop.quit();
    });
    loop.exec();
    if (result.error) {
        err << "ksearch llm ping: " << config->describe() << ": " << errorKindName(result.error->kind) << ": "
            << result.error->message << "\n";
        return exitcode::Environment;
    }
    out << "answer:   " << result.text.trimmed().left(400) << "\n";
    out << "endpoint: " << config->describe();
    if (!build.keySource.isEmpty())
        out << " (key from " << build.keySource << ")";
    out << "\n";
    out << "model:    " << (result.model.isEmpty() ? config->model : result.model) << "\n";
    out << "latency:  " << QString::number(result.latencySeconds, 'f', 2) << " s\n";
    out << "tokens:   " << result.usage.promptTokens << " prompt, " << result.usage.completionTokens << " completion ("
        << result.usage.reasoningTokens << " reasoning)\n";
    if (result.priced) {
        const auto price = table->find(result.model.isEmpty() ? config->model : result.model);
        out << "cost:     $" << QString::number(result.costDollars, 'f', 6);
        if (price)
            out << "  (" << price->pattern << " at $" << price->inputPerMTok << " in / $" << price->outputPerMTok
                << " out per million tokens)";
        out << "\n";
    } else {
        out << "cost:     unknown: the model is not in the price table; add it to " << PriceTable::userOverridePath()
            << " or pass --prices FILE\n";
    }
    return exitcode::Success;
}

} // namespace

int runLlmCommand(const QStringList& arguments, const GlobalOptions& /*global*/)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    const QString sub = arguments.size() > 1 ? arguments[1] : QString();
    if (sub == u"ping")
        return ping(QStringList {u"ksearch llm ping"_qs} + arguments.mid(2));
    if (sub.isEmpty() || sub == u"--help" || sub == u"-h") {
        (sub.isEmpty() ? err : out) << "Usage: ksearch llm ping --provider NAME --model NAME [--base-url URL] "
                                       "[--command CMD]\n  one short exchange: answer, latency, tokens and cost\n";
        return sub.isEmpty() ? exitcode::InvalidInput : exitcode::Success;
    }
    err << "ksearch llm: unknown subcommand '" << sub << "' (ping)\n";
    return exitcode::InvalidInput;
}

} // namespace ks::cli
