#include "cli/help_formatter.hpp"

#include "util/text_wrap.hpp"
#include "util/utf8.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <memory>
#include <string_view>
#include <sys/ioctl.h>
#include <unistd.h>

namespace ratelimit::cli {

namespace {

constexpr std::size_t k_default_width = 80;
constexpr std::size_t k_min_width = 40;
constexpr std::size_t k_max_width = 100;
// Where option descriptions start; a longer name has a line of its own.
constexpr std::size_t k_option_column = 28;

constexpr const char* k_global_options_note =
    "Global options (the store, --json, -q, -E, --config) go before or after the command: "
    "see ratelimit --help.";

class HelpFormatter final : public CLI::Formatter {
public:
  explicit HelpFormatter(std::size_t width) : m_width(width) {}

  // The same layout in every mode: no command's help is shown inside another's.
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode /*mode*/) const override {
    std::string out = make_description(app);
    out += '\n' + make_usage(app, name);
    if (app->get_parent() == nullptr) {
      out += make_subcommands(app, CLI::AppFormatMode::Normal);
    } else {
      out += make_positionals(app);
    }
    out += option_groups(*app);
    out += '\n' + make_footer(app);
    if (app->get_parent() != nullptr) {
      out += paragraph(k_global_options_note);
    }
    return out;
  }

  std::string make_description(const CLI::App* app) const override {
    return paragraph(app->get_description());
  }

  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string usage = "Usage: " + name;
    if (!app->get_options([](const CLI::Option* option) { return option->nonpositional(); })
             .empty()) {
      usage += " [OPTIONS]";
    }
    for (const CLI::Option* positional :
         app->get_options([](const CLI::Option* option) { return option->get_positional(); })) {
      usage += ' ' + make_option_usage(positional);
    }
    if (!app->get_subcommands({}).empty()) {
      usage += " COMMAND [ARGS]";
    }
    return paragraph(usage);
  }

  std::string make_positionals(const CLI::App* app) const override {
    std::vector<const CLI::Option*> positionals =
        app->get_options([](const CLI::Option* option) { return option->get_positional(); });
    return positionals.empty() ? std::string() : make_group("Arguments", true, positionals);
  }

  std::string make_group(std::string group, bool is_positional,
                         std::vector<const CLI::Option*> options) const override {
    std::string out = '\n' + group + ":\n";
    for (const CLI::Option* option : options) {
      out += make_option(option, is_positional);
    }
    return out;
  }

  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode) const override {
    std::vector<const CLI::App*> commands = app->get_subcommands({});
    std::size_t longest = 0;
    for (const CLI::App* command : commands) {
      longest = std::max(longest, command->get_name().size());
    }
    std::string out = "\nCommands:\n";
    for (const CLI::App* command : commands) {
      out += entry(command->get_name(), command->get_description(), longest + 4);
    }
    return out;
  }

  std::string make_footer(const CLI::App* app) const override {
    std::string footer = app->get_footer();
    return footer.empty() ? std::string() : paragraph(footer);
  }

  std::string make_option(const CLI::Option* option, bool is_positional) const override {
    return entry(make_option_name(option, is_positional) + make_option_opts(option),
                 make_option_desc(option), std::min(k_option_column, m_width / 3));
  }

  // `-r, --rate`; a positional as the usage shows it.
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override {
    if (is_positional) {
      return make_option_usage(option);
    }
    std::string name;
    for (const std::string& letter : option->get_snames()) {
      name += (name.empty() ? "-" : ", -") + letter;
    }
    for (const std::string& word : option->get_lnames()) {
      name += (name.empty() ? "--" : ", --") + word;
    }
    return name;
  }

  // ` N/PERIOD`: the value an option takes, as its declaration names it.
  std::string make_option_opts(const CLI::Option* option) const override {
    if (option->get_positional()) {
      return "";
    }
    if (!option->get_option_text().empty()) {
      return ' ' + option->get_option_text();
    }
    return option->get_type_size() != 0 ? ' ' + option->get_type_name() : std::string();
  }

  // A positional as its declaration names it (`[--] COMMAND [ARG...]`), else its name in
  // capitals, `...` when it takes several, in brackets when it may be left out.
  std::string make_option_usage(const CLI::Option* option) const override {
    if (!option->get_option_text().empty()) {
      return option->get_option_text();
    }
    std::string name = option->get_name(true, false);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (option->get_expected_max() > 1) {
      name += "...";
    }
    return option->get_required() ? name : '[' + name + ']';
  }

private:
  // `text` wrapped to the width, each line ended.
  std::string paragraph(std::string_view text) const {
    std::string out;
    for (const std::string& line : util::wrap_text(text, m_width)) {
      out += line + '\n';
    }
    return out;
  }

  // `  NAME  DESCRIPTION`, the description wrapped in a column from `column`; on the next
  // line when the name reaches into it.
  std::string entry(const std::string& name, std::string_view description,
                    std::size_t column) const {
    std::string out = "  " + name;
    if (description.empty()) {
      return out + '\n';
    }
    std::vector<std::string> lines = util::wrap_text(description, m_width - column);
    std::size_t used = util::display_width(out);
    if (used + 2 > column) {
      out += '\n';
      used = 0;
    }
    for (const std::string& line : lines) {
      out += std::string(column - used, ' ') + line + '\n';
      used = 0;
    }
    return out;
  }

  // The options of `app` that are not positionals, under the heading of each group.
  std::string option_groups(const CLI::App& app) const {
    std::string out;
    for (const std::string& group : app.get_groups()) {
      std::vector<const CLI::Option*> options = app.get_options([&](const CLI::Option* option) {
        return option->get_group() == group && option->nonpositional();
      });
      if (!group.empty() && !options.empty()) {
        out += make_group(group, false, options);
      }
    }
    return out;
  }

  std::size_t m_width;
};

} // namespace

std::size_t help_width() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0 || size.ws_col == 0) {
    return k_default_width;
  }
  return std::clamp<std::size_t>(size.ws_col, k_min_width, k_max_width);
}

void use_help_formatter(CLI::App& app, std::size_t width) {
  auto formatter = std::make_shared<HelpFormatter>(width);
  app.formatter(formatter);
  for (CLI::App* command : app.get_subcommands({})) {
    command->formatter(formatter);
  }
}

} // namespace ratelimit::cli
