#include "fakehttpserver.h"

#include <QSignalSpy>
#include <QTcpSocket>

#include <memory>

namespace ks::test {

FakeHttpServer::FakeHttpServer(QObject* parent)
    : QObject(parent)
{
    m_server.listen(QHostAddress::LocalHost, 0);
    connect(&m_server, &QTcpServer::newConnection, this, [this] {
        while (QTcpSocket* s = m_server.nextPendingConnection())
            serve(s);
    });
}

QString FakeHttpServer::baseUrl() const
{
    return QStringLiteral("http://127.0.0.1:%1/v1").arg(m_server.serverPort());
}

QByteArray FakeHttpServer::http(
    int status, const QByteArray& body, const QByteArray& extraHeaders, const QByteArray& contentType)
{
    return "HTTP/1.1 " + QByteArray::number(status) + " Status\r\nContent-Type: " + contentType + "\r\nContent-Length: "
        + QByteArray::number(body.size()) + "\r\nConnection: close\r\n" + extraHeaders + "\r\n" + body;
}

QByteArray FakeHttpServer::sse(const QList<QByteArray>& events, bool done)
{
    QByteArray out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    for (const auto& e : events)
        out += "data: " + e + "\n\n";
    if (done)
        out += "data: [DONE]\n\n";
    return out;
}

void FakeHttpServer::serve(QTcpSocket* socket)
{
    auto* buffer = new QByteArray;
    connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
    connect(socket, &QObject::destroyed, this, [buffer] { delete buffer; });
    connect(socket, &QTcpSocket::readyRead, this, [this, socket, buffer] {
        *buffer += socket->readAll();
        const qsizetype end = buffer->indexOf("\r\n\r\n");
        if (end < 0)
            return;
        const QByteArray head = buffer->left(end);
        qsizetype length = 0;
        for (const QByteArray& line : head.split('\n'))
            if (line.toLower().startsWith("content-length:"))
                length = line.mid(15).trimmed().toLongLong();
        if (buffer->size() < end + 4 + length)
            return;
        m_requests.append({head, buffer->mid(end + 4, length)});
        buffer->clear();
        Response r {http(500, R"({"error":{"message":"no scripted response"}})")};
        if (!m_responses.isEmpty())
            r = m_responses.takeFirst();
        else if (m_responder)
            r.bytes = m_responder(m_requests.back());
        if (r.hang)
            return;
        socket->write(r.bytes);
        if (r.closeAfter)
            socket->disconnectFromHost();
    });
}

LlmResult runCall(LlmProvider& provider, const LlmRequest& request, QStringList* deltas)
{
    std::unique_ptr<LlmCall> c(provider.send(request));
    QSignalSpy finished(c.get(), &LlmCall::finished);
    if (deltas)
        QObject::connect(c.get(), &LlmCall::textDelta, c.get(), [deltas](const QString& t) { deltas->append(t); });
    if (!finished.wait(20000))
        return {};
    return finished.at(0).at(0).value<LlmResult>();
}

} // namespace ks::test
