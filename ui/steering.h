#pragma once

#include <search/humancommand.h>

namespace ks::ui {

// Where a person's commands go: the running engine. The window's steering actions and their
// undo commands talk to this and to nothing else.
class Steering
{
public:
    virtual ~Steering() = default;
    virtual bool canSteer() const = 0; // a live run (not a finished or read-only session)
    virtual void send(const HumanCommand& command) = 0;
};

} // namespace ks::ui
