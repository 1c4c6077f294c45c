#pragma once

#include "definition.h"

#include <cstddef>
#include <string>
#include <vector>

namespace ks {

// Where each KsArgs field lives, computed with the x86-64 / CUDA C layout rules. The runner fills
// the struct from this table, and the generated header static_asserts the same offsets, so a
// mismatch is a compile error rather than silent garbage.
struct AbiField {
    enum class Role { Input, Scalar, Output, Axis };
    std::string name;
    Role role = Role::Input;
    DType dtype = DType::Float32; // element type (inputs, scalars, outputs); axes are int64
    std::size_t offset = 0;
    std::size_t size = 0;
};

struct AbiLayout {
    std::vector<AbiField> fields;
    std::size_t size = 0;
};

AbiLayout computeAbiLayout(const Definition& def);

// The complete ks_task.h for a task: the shared prelude, const-axis macros, KsArgs and ks_run.
std::string generateAbiHeader(const Definition& def);

// The prelude alone (element types and conversions), shared by every task.
const std::string& abiPrelude();

} // namespace ks
