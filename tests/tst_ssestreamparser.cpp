#include "testmain.h"

#include <llm/ssestreamparser.h>

using namespace ks;

class TestSseStreamParser : public QObject
{
    Q_OBJECT
private slots:
    void splitsAtAnyByte_data();
    void splitsAtAnyByte();
    void namedEventsCommentsAndMultiline();
};

void TestSseStreamParser::splitsAtAnyByte_data()
{
    QTest::addColumn<int>("chunk");
    for (const int c : {1, 2, 3, 7, 1000})
        QTest::addRow("%d-byte chunks", c) << c;
}

void TestSseStreamParser::splitsAtAnyByte()
{
    QFETCH(int, chunk);
    const QByteArray stream = "data: {\"a\":1}\r\n\r\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
    SseStreamParser parser;
    QList<SseStreamParser::Event> events;
    for (qsizetype i = 0; i < stream.size(); i += chunk)
        events += parser.feed(stream.mid(i, chunk));
    QCOMPARE(events.size(), 3);
    QCOMPARE(events[0].data, QByteArray("{\"a\":1}"));
    QCOMPARE(events[1].data, QByteArray("{\"b\":2}"));
    QCOMPARE(events[2].data, QByteArray("[DONE]"));
    QVERIFY(!parser.hasPartialEvent());
}

void TestSseStreamParser::namedEventsCommentsAndMultiline()
{
    SseStreamParser parser;
    const auto events =
        parser.feed(": keep-alive\n\nevent: content_block_delta\ndata: line one\ndata: line two\n\ndata: tail");
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0].event, QByteArray("content_block_delta"));
    QCOMPARE(events[0].data, QByteArray("line one\nline two"));
    QVERIFY(parser.hasPartialEvent()); // "data: tail" has no blank line yet
}

KS_TEST_MAIN_CORE(TestSseStreamParser)
#include "tst_ssestreamparser.moc"
