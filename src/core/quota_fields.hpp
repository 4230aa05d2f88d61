#pragma once

// The quota fields of a response head, as server_answer.hpp lists them: RateLimit-Policy and
// RateLimit (the IETF draft's forms and draft-07's), and the separate PREFIX-Limit,
// -Remaining, -Reset fields (RateLimit-* of the drafts up to 06, X-RateLimit-*), their reset
// values read by the rule server_answer.hpp gives.

#include "core/server_answer.hpp"
#include "util/http_head.hpp"

namespace ratelimit::core {

// Adds to `answer` the policies and standings that `head`'s quota fields state, with notes on
// what is ignored and how resets are read: delta-seconds from `arrived`, times by the server's
// clock moved by `answer.server_offset` (which the Date field has set).
void read_quota_fields(const util::ResponseHead& head, Nanos arrived, ServerAnswer& answer);

} // namespace ratelimit::core
