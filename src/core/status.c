/* SPDX-License-Identifier: MIT */
/* Names and descriptions of status codes, both from TUTTI_STATUS_TABLE. */
#include "tutti.h"

TUTTI_API const char *tutti_strerror(tutti_status_t status)
{
    switch (status) {
#define TT_STATUS_TEXT(name, value, text)                                                                    \
    case name: return text;
        TUTTI_STATUS_TABLE(TT_STATUS_TEXT)
#undef TT_STATUS_TEXT
    }
    return "unknown status code";
}

TUTTI_API const char *tutti_status_name(tutti_status_t status)
{
    switch (status) {
#define TT_STATUS_NAME(name, value, text)                                                                    \
    case name: return #name;
        TUTTI_STATUS_TABLE(TT_STATUS_NAME)
#undef TT_STATUS_NAME
    }
    return "TUTTI_ERR_UNKNOWN";
}

TUTTI_API int tutti_get_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = TUTTI_VERSION_MAJOR;
    if (minor)
        *minor = TUTTI_VERSION_MINOR;
    if (patch)
        *patch = TUTTI_VERSION_PATCH;
    return TUTTI_VERSION;
}
