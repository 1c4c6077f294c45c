// A server-sent-events stream of any bytes, cut into chunks at places the input chooses (its
// first byte): the events must not depend on where the network split the stream.
#include <llm/ssestreamparser.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const std::size_t step = 1 + data[0] % 17;
    const QByteArray stream(reinterpret_cast<const char*>(data + 1), static_cast<qsizetype>(size - 1));
    ks::SseStreamParser whole, chunked;
    const QList<ks::SseStreamParser::Event> expected = whole.feed(stream);
    QList<ks::SseStreamParser::Event> got;
    for (qsizetype at = 0; at < stream.size(); at += static_cast<qsizetype>(step))
        got += chunked.feed(stream.mid(at, static_cast<qsizetype>(step)));
    if (got.size() != expected.size())
        std::abort();
    for (qsizetype i = 0; i < got.size(); ++i)
        if (got[i].event != expected[i].event || got[i].data != expected[i].data)
            std::abort();
    return 0;
}
