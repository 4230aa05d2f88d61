// `pipe`: copies standard input to standard output one record at a time, each record
// released when it gets its slot. Records released by one decision go out in one write, so
// that at a rate that never binds the copy runs at nearly the speed of cat, while a record
// that has to wait for its slot is written the moment it gets it, together with those that
// fall due within the next millisecond when the limit lets them through at once.
#include "cli/acquire.hpp"
#include "cli/acquisition.hpp"
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/gate.hpp"
#include "cli/report.hpp"
#include "cli/store_failure.hpp"
#include "cli/usage_error.hpp"
#include "util/clock.hpp"
#include "util/errno_text.hpp"
#include "util/fd_io.hpp"
#include "util/key_text.hpp"
#include "util/record_reader.hpp"
#include "util/signals.hpp"
#include "util/standard_streams.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <optional>
#include <sys/prctl.h>
#include <unistd.h>

namespace ratelimit::cli {

namespace {

// What a closed reader ends `pipe` with: death by SIGPIPE, as cat and every other filter,
// which shells report as status 141 and print nothing for.
constexpr int k_exit_reader_gone = 128 + SIGPIPE;
// An input that cannot be read (a directory, say): bad input, as far as the table of exit
// statuses goes. An output that cannot be written is k_exit_output.
constexpr int k_exit_bad_input = k_exit_usage;

// How much later than its own slot a record may go out, so that records falling due close
// together share one wake-up where the limit's burst allows it (at 10 000 records/s, one
// wake-up for 10 records instead of one each).
constexpr core::Nanos k_batch_latency = 1'000'000;

constexpr int k_input = STDIN_FILENO;
constexpr int k_output = STDOUT_FILENO;

struct PipeOptions {
  LimitOptions limit;
  bool key_given = false;
  bool null = false;
  std::optional<std::string> timeout;
};

int end_for_reader_gone() {
  // The same end whether write(2) raised SIGPIPE itself or the reader went while we slept.
  // When SIGPIPE is ignored or blocked, the status says the same thing.
  ::raise(SIGPIPE);
  return k_exit_reader_gone;
}

// Holds the interrupt signals blocked for one reservation and its sleep.
class HeldSignals {
public:
  explicit HeldSignals(util::InterruptSignals& signals) : m_signals(signals) { m_signals.block(); }
  ~HeldSignals() { m_signals.restore(); }
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

private:
  util::InterruptSignals& m_signals;
};

// What ends a sleep of `pipe` early besides a signal: the reader of its output gone.
constexpr int k_reader_gone = -1;

// The sleeps of `pipe`: a signal ends one (its number the code) when the gate is shared,
// and so does the reader of standard output going away (k_reader_gone).
class PipeSleeper final : public Sleeper {
public:
  // `signals` null: signals end the process as they would cat.
  explicit PipeSleeper(util::InterruptSignals* signals) : m_signals(signals) {}

  core::Nanos now() override { return util::monotonic_nanos(); }
  int sleep(core::Nanos duration) override {
    bool reader_gone = false;
    if (m_signals != nullptr) {
      if (int signal = m_signals->sleep_watching(duration, k_output, reader_gone)) {
        return signal;
      }
    } else {
      reader_gone = !util::sleep_unless_reader_gone(k_output, duration);
    }
    return reader_gone ? k_reader_gone : 0;
  }

private:
  util::InterruptSignals* m_signals;
};

class Pipe {
public:
  Pipe(Gate& gate, const LimitedRequest& request, const OutputSettings& output, char delimiter,
       core::Nanos timeout)
      : m_gate(gate), m_request(request), m_output(output), m_timeout(timeout),
        m_reader(k_input, delimiter), m_combine(instant_grants_combine(request.algorithm)),
        m_batch_records(m_combine ? batch_records(request) : 1) {
    if (m_gate.shared()) {
      // Held only around each reservation and its sleep: reading and writing end on a
      // signal as in any filter.
      m_signals.emplace();
      m_signals->restore();
    }
    // Wake-ups as close to each slot as the kernel allows, rather than up to 50 µs late:
    // with a small burst, lateness is lost rate.
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  }

  int run() {
    for (;;) {
      util::RecordReader::Span first = m_reader.peek(1);
      if (first.records == 0) {
        if (util::wait_for_input(k_input, k_output) == util::InputWait::reader_gone) {
          return end_for_reader_gone();
        }
        if (m_reader.fill()) {
          continue;
        }
        if (m_reader.error() != 0) {
          util::write_stderr(fmt::format("ratelimit: pipe: cannot read standard input: {}\n",
                                         std::strerror(m_reader.error())));
          return k_exit_bad_input;
        }
        // A last record without a delimiter passes through as it is.
        std::string_view rest = m_reader.rest();
        if (rest.empty()) {
          return k_exit_granted;
        }
        if (int status = release(rest.size(), false); status >= 0) {
          return status;
        }
        return k_exit_granted;
      }
      if (int status = release(first.bytes.size(), true); status >= 0) {
        return status;
      }
    }
  }

private:
  // Takes a slot for the record of `size` bytes at the cursor, plus slots for the records
  // after it that are granted at the same instant when `more` allows, and writes them all.
  // Returns -1 to go on, or the exit status.
  int release(std::size_t size, bool more) {
    core::Decision decision;
    std::size_t batched = 0;
    if (int status = take_slot(decision, more, batched); status >= 0) {
      return status;
    }
    ++m_released;
    if (batched > 0) {
      m_released += batched;
      size = m_reader.peek(batched + 1).bytes.size();
    } else if (more && m_combine && decision.wait == 0) {
      size = add_instant_grants(size, decision.remaining / m_request.cost);
    }
    util::WriteResult result = util::write_all(k_output, m_reader.buffered().substr(0, size));
    if (result == util::WriteResult::reader_gone) {
      return end_for_reader_gone();
    }
    if (result == util::WriteResult::failed) {
      util::write_stderr(fmt::format("ratelimit: pipe: cannot write standard output: {}\n",
                                     util::describe_errno(errno)));
      return k_exit_output;
    }
    m_reader.consume(size);
    return -1;
  }

  // Reserves the next record's slot and sleeps until it, within --timeout. When it has to
  // sleep and `more` allows, also reserves slots for the `batched` records after it that
  // fall due within k_batch_latency, and sleeps until the last of them. Returns -1 when the
  // slots have come, with `decision` the first record's grant, or the exit status.
  int take_slot(core::Decision& decision, bool more, std::size_t& batched) {
    SlotAsk ask;
    ask.cost = m_request.cost;
    ask.max_wait = m_timeout;
    ask.ask_again_after_refusal = true;
    std::size_t reserved = 0;
    ReserveMore reserve_more;
    if (more) {
      reserve_more = [&](core::Nanos first_wait, core::Nanos max_wait) {
        std::optional<Batch> batch = reserve_batch(first_wait, max_wait);
        reserved = batch ? batch->records : 0;
        return batch ? std::optional(batch->decision) : std::nullopt;
      };
    }
    Acquisition acquired;
    {
      // A reservation in the store must not be lost to a signal before the sleep that
      // could give it back; one in this process goes with it.
      std::optional<HeldSignals> held;
      if (m_signals) {
        held.emplace(*m_signals);
      }
      PipeSleeper sleeper(m_signals ? &*m_signals : nullptr);
      acquired = acquire_slot(m_gate, sleeper, ask, reserve_more);
    }
    if (!acquired.pause_unchecked.empty()) {
      util::write_stderr(pause_unchecked_warning(m_request.key, acquired.pause_unchecked));
    }
    if (acquired.interrupted == k_reader_gone) {
      return end_for_reader_gone();
    }
    if (acquired.interrupted != 0) {
      return 128 + acquired.interrupted;
    }
    decision = std::move(acquired.decision);
    if (!decision.allowed) {
      report_timeout(decision);
      return m_output.limited_exit_code;
    }
    if (acquired.more) {
      batched = reserved;
    }
    return -1;
  }

  // Slots reserved together for the records after a waiting one.
  struct Batch {
    core::Decision decision;
    std::size_t records;
  };

  // Reserves slots for the complete records buffered after the one whose slot is `first_wait`
  // away, as many as fall due within k_batch_latency of it, when the limits' bursts allow.
  // Nothing when the key has none that soon (another process sharing it may have taken them).
  std::optional<Batch> reserve_batch(core::Nanos first_wait, core::Nanos max_wait) {
    if (m_batch_records <= 1) {
      return std::nullopt;
    }
    util::RecordReader::Span span = m_reader.peek(m_batch_records);
    if (span.records <= 1) {
      return std::nullopt;
    }
    core::Request request;
    request.cost = static_cast<std::int64_t>(span.records - 1) * m_request.cost;
    request.reserve = true;
    request.max_wait = std::min(max_wait, first_wait + k_batch_latency);
    Batch batch{m_gate.decide(request), span.records - 1};
    if (!batch.decision.allowed) {
      return std::nullopt;
    }
    return batch;
  }

  // How many records one wake-up may release: the cost every limit lets through within
  // k_batch_latency, and grants at once (Limit::max_cost). 1 when that is a single record.
  static std::size_t batch_records(const LimitedRequest& request) {
    std::int64_t units = std::numeric_limits<std::int64_t>::max();
    for (const core::Limit& limit : request.limits) {
      std::int64_t due =
          std::max<std::int64_t>(1, k_batch_latency / limit.rate.emission_interval());
      units = std::min({units, due, limit.max_cost(request.algorithm)});
    }
    return static_cast<std::size_t>(std::max<std::int64_t>(1, units / request.cost));
  }

  // With `units` of cost still free at the instant the record of `size` bytes was granted,
  // takes them for the complete records buffered after it; returns the bytes released.
  std::size_t add_instant_grants(std::size_t size, std::int64_t units) {
    if (units <= 0) {
      return size;
    }
    util::RecordReader::Span span = m_reader.peek(static_cast<std::size_t>(units) + 1);
    std::size_t records = span.records - 1;
    if (records == 0) {
      return size;
    }
    core::Request request;
    request.cost = static_cast<std::int64_t>(records) * m_request.cost;
    // A try: nothing is reserved, so nothing would need giving back on a signal. Another
    // process sharing the key may have taken the units meanwhile; the records then wait
    // for their own slots.
    if (!m_gate.decide(request).allowed) {
      return size;
    }
    m_released += records;
    return span.bytes.size();
  }

  void report_timeout(const core::Decision& decision) const {
    if (m_output.quiet) {
      return;
    }
    std::string key = m_request.key.empty() ? "" : " on " + util::printable_key(m_request.key);
    util::write_stderr(
        fmt::format("ratelimit: pipe: no slot within {} for record {}{} {}; next slot in {}; "
                    "stopped before it\n",
                    core::format_seconds(m_timeout), m_released + 1, key,
                    describe_limit(m_request.algorithm, m_request.limits[decision.binding]),
                    core::format_seconds(decision.wait)));
  }

  Gate& m_gate;
  const LimitedRequest& m_request;
  const OutputSettings& m_output;
  core::Nanos m_timeout;
  util::RecordReader m_reader;
  // For a shared gate only.
  std::optional<util::InterruptSignals> m_signals;
  bool m_combine;
  std::size_t m_batch_records;
  std::uint64_t m_released = 0;
};

// Takes the algorithm of the stored key `request.key`, when there is one.
void adopt_stored_algorithm(store::Store& store, LimitedRequest& request) {
  std::vector<store::KeyStatus> stored = store.status(std::span(&request.key, 1));
  if (!stored.empty() && stored.front().damage.empty()) {
    request.algorithm = stored.front().state.algorithm;
  }
}

int run_pipe(PipeOptions options, const OutputSettings& output, ConfigFiles& config,
             StoreOpener& stores) {
  // An empty KEY typed out is a mistake, not a request for a limiter of our own.
  std::optional<std::string> named_timeout = apply_named_limit(options.limit, config);
  LimitedRequest request = resolve(options.limit, options.key_given);
  core::Nanos timeout = parse_timeout(options.timeout ? options.timeout : named_timeout);
  if (output.json) {
    throw UsageError("--json does not apply to pipe: standard output carries the records");
  }
  char delimiter = options.null ? '\0' : '\n';
  if (request.key.empty()) {
    LocalGate gate(request, util::realtime_nanos);
    return Pipe(gate, request, output, delimiter, timeout).run();
  }
  // One connection for the whole stream; each decision is its own transaction.
  std::string failure;
  std::unique_ptr<store::Store> store =
      stores.open_or_fall_back(failure, [&](store::Store& opened) {
        if (!request.algorithm_chosen) {
          // The key's own algorithm paces the records (how they batch), as it decides them.
          adopt_stored_algorithm(opened, request);
        }
      });
  FailOpenGate gate(store.get(), request, stores, failure);
  return Pipe(gate, request, output, delimiter, timeout).run();
}

} // namespace

CommandRun setup_pipe(CLI::App& app, const MentionedOptions& mentioned) {
  auto options = std::make_shared<PipeOptions>();
  CLI::App* command = app.add_subcommand(
      "pipe", "Copy stdin to stdout, releasing each line (or NUL-terminated record) at its slot");
  command->footer(
      "Without KEY the limit is this process's own; with KEY every record takes a slot of the "
      "shared key.\n"
      "Exit status: 0 at the end of the input; 1 (-E) when a record gets no slot within "
      "--timeout; 4 when stdout cannot be written; 141, killed by SIGPIPE like "
      "cat, when the reader goes away; 128+N on signal N during a wait.\n"
      "Example: producer | ratelimit pipe -r 5/s | xargs -n1 curl -sO");
  add_limit_options(*command, options->limit, mentioned, /*key_required=*/false);
  if (mentioned.any_of("-0,--null")) {
    command->add_flag("-0,--null", options->null,
                      "Records end in NUL, not newline (find -print0, xargs -0)");
  }
  if (mentioned.any_of("-t,--timeout")) {
    command
        ->add_option("-t,--timeout", options->timeout,
                     "Stop (exit 1) at a record whose slot is further away than this")
        ->option_text("DURATION");
  }
  return
      [command, options](const OutputSettings& output, ConfigFiles& config, StoreOpener& stores) {
        options->key_given = command->count("key") > 0;
        return run_pipe(*options, output, config, stores);
      };
}

} // namespace ratelimit::cli
