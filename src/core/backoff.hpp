#pragma once

#include "core/time.hpp"

namespace ratelimit::core {

// How long `run --backoff-on` pauses its key after the command's `n`th backoff exit (0 for
// the first): `base` doubled `n` times, at most `cap`, then lengthened by up to half of
// itself by `jitter` (in [0, 1), drawn by the caller), and never beyond `cap`.
//
// The jitter only lengthens: `base` is the least the user asked for (often what the remote
// API wants at the least), and the pause is shared by every process on the key, so the
// spacing after it is the limiter's job; the jitter only keeps runs on separate keys that
// failed together from coming back in step. `base` > 0 and `cap` >= `base`.
Nanos backoff_delay(Nanos base, Nanos cap, int n, double jitter);

} // namespace ratelimit::core
