#pragma once

#include <llm/llmprovider.h>

#include <QByteArray>
#include <QList>
#include <QTcpServer>

#include <functional>

namespace ks::test {

// An HTTP/1.1 server on 127.0.0.1 that answers each connection with the next scripted response
// and records what it received: real sockets and real HTTP for provider tests, no internet.
class FakeHttpServer : public QObject
{
    Q_OBJECT
public:
    struct Response {
        QByteArray bytes; // written as they are: status line, headers, body
        bool closeAfter = true; // false: keep the connection open and silent afterwards
        bool hang = false; // never answer at all
    };
    struct Request {
        QByteArray head; // request line and headers
        QByteArray body;
    };

    explicit FakeHttpServer(QObject* parent = nullptr);
    QString baseUrl() const; // http://127.0.0.1:<port>/v1
    void enqueue(const Response& r) { m_responses.append(r); }
    // Answers every request without a scripted response (a stand-in that reads the request).
    void setResponder(std::function<QByteArray(const Request&)> responder) { m_responder = std::move(responder); }
    const QList<Request>& requests() const { return m_requests; }

    static QByteArray http(int status, const QByteArray& body, const QByteArray& extraHeaders = {},
        const QByteArray& contentType = "application/json");
    // A 200 text/event-stream answer with one `data:` event per item (and [DONE] when asked).
    static QByteArray sse(const QList<QByteArray>& events, bool done = true);

private:
    void serve(QTcpSocket* socket);

    QTcpServer m_server;
    QList<Response> m_responses;
    QList<Request> m_requests;
    std::function<QByteArray(const Request&)> m_responder;
};

// Sends one request and waits (with the event loop running) for its result; streamed pieces
// are collected into `deltas` when given.
LlmResult runCall(LlmProvider& provider, const LlmRequest& request, QStringList* deltas = nullptr);

} // namespace ks::test
