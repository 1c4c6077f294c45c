"""KsArgs as ks_task.h declares it, for the bench scripts that call ks_run through ctypes."""
import re

# C types of KsArgs fields that are not pointers, by the ctypes name that matches them.
CTYPES = {"float": "c_float", "double": "c_double", "int64_t": "c_int64", "int32_t": "c_int32", "int": "c_int",
          "uint8_t": "c_uint8", "bool": "c_bool"}


def ksargs_fields(header):
    """(name, ctypes type name) of KsArgs's fields in declaration order; pointers are c_void_p."""
    body = re.search(r"typedef struct KsArgs \{(.*?)\} KsArgs;", header, re.S).group(1)
    fields = []
    for line in body.splitlines():
        m = re.match(r"\s*(const\s+)?([\w ]+?)\s*(\*?)\s*(\w+);", line)
        if m:
            fields.append((m.group(4), "c_void_p" if m.group(3) else CTYPES[m.group(2).strip()]))
    return fields
