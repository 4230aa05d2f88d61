#include "core/quota_fields.hpp"

#include "core/bounds.hpp"
#include "util/structured_fields.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ratelimit::core {

namespace {

namespace sf = util::sf;

// Reset values from here on are epoch seconds, and from the next on epoch milliseconds (see
// server_answer.hpp).
constexpr std::int64_t k_epoch_seconds_from = 1'000'000'000;
constexpr std::int64_t k_epoch_millis_from = 1'000'000'000'000;

constexpr Nanos k_nanos_per_thousandth = k_nanos_per_milli;

// Joins a field's lines as one list, as RFC 9110 allows for list-based fields.
std::string joined(const std::vector<std::string_view>& values) {
  std::string text;
  for (std::string_view value : values) {
    if (!text.empty()) {
      text += ", ";
    }
    text += value;
  }
  return text;
}

// An SF Integer or Decimal item as thousandths; nothing for other types.
std::optional<std::int64_t> thousandths(const sf::BareItem& item) {
  if (item.type == sf::BareItem::Type::integer) {
    return item.number * 1000;
  }
  if (item.type == sf::BareItem::Type::decimal) {
    return item.number;
  }
  return std::nullopt;
}

// A count of requests: an SF Integer from 0 to k_max_count.
std::optional<std::int64_t> count_of(const sf::BareItem* item) {
  if (item == nullptr || item->type != sf::BareItem::Type::integer || item->number < 0 ||
      item->number > k_max_count) {
    return std::nullopt;
  }
  return item->number;
}

// A policy's name: an SF String or Token.
std::optional<std::string> name_of(const sf::BareItem& item) {
  if (item.type == sf::BareItem::Type::string || item.type == sf::BareItem::Type::token) {
    return item.text;
  }
  return std::nullopt;
}

// Reads the quota fields of one head into an answer, noting what it ignores.
class QuotaReading {
public:
  QuotaReading(const util::ResponseHead& head, ServerAnswer& answer, Nanos arrived)
      : m_head(head), m_answer(answer), m_arrived(arrived) {}

  // RateLimit-Policy: the IETF draft's list of quota policies.
  void read_policies() {
    std::vector<std::string_view> lines = values("ratelimit-policy");
    if (lines.empty()) {
      return;
    }
    std::string text = joined(lines);
    std::string why;
    auto members = sf::parse_list(text, &why);
    if (!members) {
      note("ratelimit-policy", text, "ignored: not a structured-field list: " + why);
      return;
    }
    for (const sf::Member& member : *members) {
      if (member.is_inner_list) {
        note("ratelimit-policy", text, "a member is an inner list: ignored");
        continue;
      }
      QuotaPolicy policy;
      policy.field = "ratelimit-policy";
      std::optional<std::int64_t> quota;
      if (member.item.type == sf::BareItem::Type::integer) {
        quota = count_of(&member.item); // draft-07: 100;w=10
      } else if (auto name = name_of(member.item)) {
        policy.policy = *name;
        quota = count_of(member.param("q"));
        const sf::BareItem* unit = member.param("qu");
        if (unit != nullptr && (name_of(*unit).value_or("") != "requests")) {
          m_other_units.push_back(*name);
          note("ratelimit-policy", text,
               fmt::format("policy \"{}\" counts other units than requests: ignored", *name));
          continue;
        }
      }
      if (!quota) {
        note("ratelimit-policy", text, "a member has no quota (q) from 0 to 10^12: ignored");
        continue;
      }
      policy.quota = *quota;
      if (const sf::BareItem* window = member.param("w")) {
        if (window->type != sf::BareItem::Type::integer || window->number <= 0 ||
            window->number > k_max_duration / k_nanos_per_second) {
          note("ratelimit-policy", text,
               fmt::format("policy \"{}\": its window (w) is not whole seconds above 0: read "
                           "without it",
                           policy.policy));
        } else {
          policy.window = window->number * k_nanos_per_second;
        }
      }
      m_answer.policies.push_back(std::move(policy));
    }
  }

  // RateLimit: the IETF draft's service limits (a List), or draft-07's Dictionary.
  void read_service_limits() {
    std::vector<std::string_view> lines = values("ratelimit");
    if (lines.empty()) {
      return;
    }
    std::string text = joined(lines);
    std::string why;
    if (auto members = sf::parse_list(text, &why)) {
      for (const sf::Member& member : *members) {
        read_service_limit(text, member);
      }
      return;
    }
    std::vector<sf::Member> dictionary =
        sf::parse_dictionary(text).value_or(std::vector<sf::Member>{});
    const sf::Member* remaining = nullptr;
    const sf::Member* reset = nullptr;
    const sf::Member* limit = nullptr;
    for (const sf::Member& member : dictionary) {
      if (member.is_inner_list) {
        continue;
      }
      if (member.key == "remaining") {
        remaining = &member;
      } else if (member.key == "reset") {
        reset = &member;
      } else if (member.key == "limit") {
        limit = &member;
      }
    }
    if (remaining == nullptr && limit == nullptr) {
      note("ratelimit", text, "ignored: not a structured-field list: " + why);
      return;
    }
    // draft-07: limit=100, remaining=50, reset=5
    if (limit != nullptr) {
      if (auto quota = count_of(&limit->item)) {
        m_answer.policies.push_back({"ratelimit", "", *quota, std::nullopt});
      } else {
        note("ratelimit", text, "limit is not a count from 0 to 10^12: ignored");
      }
    }
    if (remaining != nullptr) {
      add_standing("ratelimit", "", text, &remaining->item,
                   reset != nullptr ? &reset->item : nullptr, "ratelimit", text);
    }
  }

  // The separate fields of the older drafts and of GitHub: PREFIX-limit, -remaining, -reset.
  void read_separate_fields(std::string_view prefix) {
    std::string limit_field = fmt::format("{}-limit", prefix);
    std::string remaining_field = fmt::format("{}-remaining", prefix);
    std::string reset_field = fmt::format("{}-reset", prefix);
    for (const sf::Member& member : number_list(limit_field)) {
      std::optional<std::int64_t> quota = count_of(&member.item);
      if (!quota) {
        note(limit_field, joined(values(limit_field)),
             "a value is not a count from 0 to 10^12: ignored");
        continue;
      }
      QuotaPolicy policy{limit_field, "", *quota, std::nullopt};
      const sf::BareItem* window = member.param("w");
      window = window != nullptr ? window : member.param("window");
      if (window != nullptr && window->type == sf::BareItem::Type::integer && window->number > 0 &&
          window->number <= k_max_duration / k_nanos_per_second) {
        policy.window = window->number * k_nanos_per_second;
      }
      m_answer.policies.push_back(std::move(policy));
    }
    std::vector<sf::Member> remaining = number_list(remaining_field);
    std::vector<sf::Member> reset = number_list(reset_field);
    // Repeated values (several lines, or a proxy's join): the least remaining, the latest
    // reset.
    const sf::Member* least = nullptr;
    for (const sf::Member& member : remaining) {
      std::optional<std::int64_t> count = count_of(&member.item);
      if (!count) {
        note(remaining_field, joined(values(remaining_field)),
             "a value is not a count from 0 to 10^12: ignored");
      } else if (least == nullptr || *count < least->item.number) {
        least = &member;
      }
    }
    if (least == nullptr) {
      if (!reset.empty()) {
        note(reset_field, joined(values(reset_field)),
             fmt::format("no {} to go with it: nothing to reset", remaining_field));
      }
      return;
    }
    if (remaining.size() > 1) {
      note(remaining_field, joined(values(remaining_field)),
           "more than one value: the least counts");
    }
    std::string reset_text = joined(values(reset_field));
    std::optional<Nanos> latest;
    const sf::Member* latest_reset = nullptr;
    for (const sf::Member& member : reset) {
      std::optional<Nanos> at = reset_time(reset_field, reset_text, member.item, false);
      if (at && (!latest || *at > *latest)) {
        latest = at;
        latest_reset = &member;
      }
    }
    if (reset.size() > 1) {
      note(reset_field, reset_text, "more than one value: the latest counts");
    }
    add_standing(remaining_field, "", joined(values(remaining_field)), &least->item,
                 latest_reset != nullptr ? &latest_reset->item : nullptr, reset_field, reset_text);
  }

private:
  void note(std::string_view field, std::string_view value, std::string text) {
    m_answer.note(field, value, std::move(text));
  }

  std::vector<std::string_view> values(std::string_view field) const {
    return util::field_values(m_head, field);
  }

  // The members of a numeric field (one or several values: `5000`, `10, 10;w=1`), or none
  // (with a note) when it is not such a list.
  std::vector<sf::Member> number_list(const std::string& field) {
    std::vector<std::string_view> lines = values(field);
    if (lines.empty()) {
      return {};
    }
    std::string text = joined(lines);
    std::string why;
    auto members = sf::parse_list(text, &why);
    if (!members) {
      note(field, text, "ignored: not a number (or a list of numbers): " + why);
      return {};
    }
    std::vector<sf::Member> numbers;
    for (sf::Member& member : *members) {
      if (member.is_inner_list || !thousandths(member.item)) {
        note(field, text, "a value that is not a number: ignored");
      } else {
        numbers.push_back(std::move(member));
      }
    }
    return numbers;
  }

  // When a reset value says the quota is restored, by the rule in the header: a time by
  // the epoch (seconds or milliseconds) or delta-seconds. `delta_only` for the IETF `t`
  // parameter, which the draft defines as delta-seconds. Nothing for a value that is not a
  // number of seconds, with a note.
  std::optional<Nanos> reset_time(std::string_view field, std::string_view text,
                                  const sf::BareItem& item, bool delta_only) {
    std::optional<std::int64_t> value = thousandths(item);
    if (!value || *value < 0) {
      note(field, text, "a reset that is not a number of seconds from 0: ignored");
      return std::nullopt;
    }
    if (delta_only || *value < k_epoch_seconds_from * 1000) {
      Wide delta = static_cast<Wide>(*value) * k_nanos_per_thousandth;
      return m_arrived + static_cast<Nanos>(std::min<Wide>(delta, k_max_duration));
    }
    if (item.type == sf::BareItem::Type::integer && item.number >= k_epoch_millis_from) {
      return on_our_clock(static_cast<Wide>(item.number) * k_nanos_per_milli,
                          m_answer.server_offset, m_arrived);
    }
    return on_our_clock(static_cast<Wide>(*value) * k_nanos_per_thousandth, m_answer.server_offset,
                        m_arrived);
  }

  // A standing of `remaining` until `reset`, as the field `field` (written `text`) said it,
  // the reset from `reset_field` (written `reset_text`), delta-seconds when `delta_only`.
  // Ignored, with a note, when the reset has come; kept without a reset when none is read.
  void add_standing(const std::string& field, const std::string& policy, std::string_view text,
                    const sf::BareItem* remaining, const sf::BareItem* reset,
                    std::string_view reset_field, std::string_view reset_text,
                    bool delta_only = false) {
    std::optional<std::int64_t> count = count_of(remaining);
    if (!count) {
      note(field, text, "the remaining count is not a count from 0 to 10^12: ignored");
      return;
    }
    QuotaStanding standing{field, policy, *count, std::nullopt};
    if (reset != nullptr) {
      standing.reset = reset_time(reset_field, reset_text, *reset, delta_only);
      if (standing.reset && *standing.reset <= m_arrived) {
        note(reset_field, reset_text,
             "the quota is already restored (its reset has come): the standing is ignored");
        return;
      }
      if (standing.reset && !delta_only &&
          thousandths(*reset).value_or(0) >= k_epoch_seconds_from * 1000) {
        note(reset_field, reset_text,
             item_is_millis(*reset) ? "read as epoch milliseconds (10^12 or more)"
                                    : "read as epoch seconds (10^9 or more)");
      }
    }
    if (!standing.reset) {
      for (const QuotaPolicy& known : m_answer.policies) {
        if (!policy.empty() && known.policy == policy && known.window) {
          // The quota is restored within the policy's window at the latest.
          standing.reset = m_arrived + *known.window;
          note(field, text,
               fmt::format("policy \"{}\" has no reset time (t): its window counts", policy));
          break;
        }
      }
      if (!standing.reset) {
        note(field, text, "no reset time: the quota's standing is shown, not when it ends");
      }
    }
    m_answer.standings.push_back(std::move(standing));
  }

  static bool item_is_millis(const sf::BareItem& item) {
    return item.type == sf::BareItem::Type::integer && item.number >= k_epoch_millis_from;
  }

  // One member of the IETF RateLimit list: "name";r=R;t=T.
  void read_service_limit(std::string_view text, const sf::Member& member) {
    std::optional<std::string> name = member.is_inner_list ? std::nullopt : name_of(member.item);
    if (!name) {
      note("ratelimit", text, "a member does not name its policy (\"name\";r=R;t=T): ignored");
      return;
    }
    if (std::find(m_other_units.begin(), m_other_units.end(), *name) != m_other_units.end()) {
      note("ratelimit", text,
           fmt::format("policy \"{}\" counts other units than requests: ignored", *name));
      return;
    }
    const sf::BareItem* reset = member.param("t");
    if (reset != nullptr && reset->type != sf::BareItem::Type::integer) {
      note("ratelimit", text,
           fmt::format("policy \"{}\": its t is not whole seconds: ignored", *name));
      return;
    }
    add_standing("ratelimit", *name, text, member.param("r"), reset, "ratelimit", text, true);
  }

  const util::ResponseHead& m_head;
  ServerAnswer& m_answer;
  Nanos m_arrived;
  std::vector<std::string> m_other_units; // policies counted in other units than requests
};

} // namespace

void read_quota_fields(const util::ResponseHead& head, Nanos arrived, ServerAnswer& answer) {
  QuotaReading reading(head, answer, arrived);
  reading.read_policies();
  reading.read_service_limits();
  reading.read_separate_fields("ratelimit");
  reading.read_separate_fields("x-ratelimit");
}

} // namespace ratelimit::core
