#pragma once

#include <optional>
#include <string_view>

namespace ks {

// Why a step of the search was taken: the world model's calls and the edits they make, the code
// policy's prompts and the attempts they write, and the edits and programs that come from
// elsewhere. The journal, tree.json and the prompts' files keep each by its name (purposeName),
// which never changes, so sessions of every build read alike.
enum class Purpose {
    // The world model, asked ...
    Init, // "init": for the first intents of the tree
    Update, // "update": after an action whose intent was solved (its V and the frontier)
    TooHard, // "too_hard": after an action that found nothing that passed
    Fill, // "fill": to refill a frontier that ran empty
    // The code policy, asked ...
    Action, // "action": for the first attempt at an intent
    Debug, // "debug": again, after attempts of which none passed
    Improve, // "improve": for a faster one, after one passed
    Evolve, // "evolve": by the evolutionary strategy (a parent and inspirations)
    Greedy, // "greedy": by the greedy strategy (the best so far)
    // From elsewhere:
    Human, // "human": a person's edit or program
    Seed, // "seed": the program a run starts from
    Propose, // "propose": evolve and greedy insert the node they implement next
    Fallback, // "fallback": a generic intent, when the world model could not fill the frontier
};

std::string_view purposeName(Purpose p);
std::optional<Purpose> parsePurpose(std::string_view name);

} // namespace ks
