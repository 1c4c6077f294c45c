#include "testmain.h"

#include <search/answerparsing.h>

using namespace ks;

// Getting the JSON edit and the program out of what LLMs actually write: fences, prose, nested
// braces, strings with braces, truncated answers.
class TestAnswerParsing : public QObject
{
    Q_OBJECT
private slots:
    void jsonObjects_data();
    void jsonObjects();
    void noJson_data();
    void noJson();
    void programs_data();
    void programs();
    void noProgram_data();
    void noProgram();
};

void TestAnswerParsing::jsonObjects_data()
{
    QTest::addColumn<QString>("answer");
    QTest::addColumn<QString>("reasoning"); // the "reasoning" field of what was found
    QTest::newRow("bare") << R"({"reasoning": "a", "insert": []})"
                          << "a";
    QTest::newRow("fenced json") << "Here:\n```json\n{\"reasoning\": \"b\", \"update\": []}\n```\nDone."
                                 << "b";
    QTest::newRow("fence without language") << "```\n{\"reasoning\": \"c\"}\n```"
                                            << "c";
    QTest::newRow("prose around") << "I think so. {\"reasoning\": \"d\", \"prune\": []} That is all."
                                  << "d";
    QTest::newRow("braces inside strings")
        << R"(Plan: {"reasoning": "use {tile} and \"quotes\" }", "insert": [{"parent": "root", "intent": "x {y}", "priority": 0.5}]})"
        << "use {tile} and \"quotes\" }";
    QTest::newRow("an example object before the answer")
        << "The format is {\"a\": 1}. My answer:\n{\"reasoning\": \"e\", \"insert\": []}"
        << "e";
    QTest::newRow("nested objects") << R"({"reasoning": "f", "insert": [{"parent": "root", "meta": {"k": {"v": 1}}}]})"
                                    << "f";
}

void TestAnswerParsing::jsonObjects()
{
    QFETCH(QString, answer);
    QFETCH(QString, reasoning);
    std::string error;
    const auto j = extractJsonObject(answer.toStdString(), error);
    QVERIFY2(j, error.c_str());
    QCOMPARE(QString::fromStdString(j->value("reasoning", std::string())), reasoning);
}

void TestAnswerParsing::noJson_data()
{
    QTest::addColumn<QString>("answer");
    QTest::addColumn<QString>("error");
    QTest::newRow("empty") << ""
                           << "no JSON object";
    QTest::newRow("prose") << "I would fuse the heads first."
                           << "no JSON object";
    QTest::newRow("cut off") << "{\"reasoning\": \"the answer was cut"
                             << "never ends";
    QTest::newRow("invalid JSON") << "{\"reasoning\": 'single quotes'}"
                                  << "does not parse";
    // Found by fuzz/fuzz_answer: a number beyond double's range threw past the parser.
    QTest::newRow("number out of range") << "{\"insert\": [{\"priority\": 33e333}]}"
                                         << "does not parse";
}

void TestAnswerParsing::noJson()
{
    QFETCH(QString, answer);
    QFETCH(QString, error);
    std::string why;
    QVERIFY(!extractJsonObject(answer.toStdString(), why));
    QVERIFY2(why.find(error.toStdString()) != std::string::npos, why.c_str());
}

void TestAnswerParsing::programs_data()
{
    QTest::addColumn<QString>("answer");
    QTest::addColumn<QString>("contains");
    QTest::newRow("cuda fence") << "Sure.\n```cuda\n#include \"ks_task.h\"\nextern \"C\" int ks_run() {}\n```\n"
                                << "extern \"C\" int ks_run";
    QTest::newRow("the block with ks_run wins") << "Helper:\n```cpp\nint helper();\n```\nKernel:\n```cpp\n#include "
                                                   "\"ks_task.h\"\nint ks_run() { return 0; }\n```"
                                                << "int ks_run()";
    QTest::newRow("single block without ks_run") << "```c++\nint main() {}\n```"
                                                 << "int main()";
    QTest::newRow("bare source") << "#include \"ks_task.h\"\nextern \"C\" int ks_run() { return 0; }\n"
                                 << "#include";
    QTest::newRow("unclosed fence") << "```cuda\n#include \"ks_task.h\"\nint ks_run() {\n"
                                    << "int ks_run()";
}

void TestAnswerParsing::programs()
{
    QFETCH(QString, answer);
    QFETCH(QString, contains);
    std::string problem;
    const auto p = extractProgram(answer.toStdString(), problem);
    QVERIFY2(p, problem.c_str());
    QVERIFY2(p->find(contains.toStdString()) != std::string::npos, p->c_str());
    QVERIFY(p->find("```") == std::string::npos);
}

void TestAnswerParsing::noProgram_data()
{
    QTest::addColumn<QString>("answer");
    QTest::addColumn<QString>("problem");
    QTest::newRow("prose") << "Use wgmma."
                           << "no fenced code block";
    QTest::newRow("two blocks without ks_run") << "```\na\n```\n```\nb\n```"
                                               << "none defines ks_run";
    QTest::newRow("empty block") << "```cuda\n\n```"
                                 << "empty";
}

void TestAnswerParsing::noProgram()
{
    QFETCH(QString, answer);
    QFETCH(QString, problem);
    std::string why;
    QVERIFY(!extractProgram(answer.toStdString(), why));
    QVERIFY2(why.find(problem.toStdString()) != std::string::npos, why.c_str());
}

KS_TEST_MAIN_CORE(TestAnswerParsing)
#include "tst_answerparsing.moc"
