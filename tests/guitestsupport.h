#pragma once

#include <QApplication>
#include <QDialog>
#include <QTimer>

#include <functional>

namespace ks::test {

// Fills in and closes the next modal dialog as soon as it opens (steering actions ask for a V,
// an intent, a reason...), so a test can trigger an action that calls exec().
inline void answerNextDialog(std::function<void(QDialog*)> fill, int attempts = 200)
{
    QTimer::singleShot(10, qApp, [fill, attempts] {
        auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
        if (!dialog) {
            if (attempts > 0)
                answerNextDialog(fill, attempts - 1);
            return;
        }
        fill(dialog);
    });
}

} // namespace ks::test
