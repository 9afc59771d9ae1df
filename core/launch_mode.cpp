#include "core/launch_mode.hpp"

#include "core/error.hpp"

namespace atvoss {

LaunchMode launch_mode_named(const std::string& name, const std::string& field) {
  if (name == "host") return LaunchMode::host;
  if (name == "sunk") return LaunchMode::sunk;
  throw_bad_input(field + " must be \"host\" or \"sunk\", got \"" + name + "\"");
}

const char* to_string(LaunchMode m) { return m == LaunchMode::sunk ? "sunk" : "host"; }

LaunchMode launch_mode_of(const Target& t) { return t.launch == "sunk" ? LaunchMode::sunk : LaunchMode::host; }

Target launched(const Target& t, LaunchMode m, const std::string& field) {
  if (to_string(m) == t.launch) return t;
  if (m == LaunchMode::host) {
    throw_bad_input(field + ": target " + t.name + " is described as a sunk graph; its host launch cost is not known");
  }
  if (t.sunk_launch_us <= 0) {
    throw_bad_input(field + ": target " + t.name +
                    " gives no sunk_launch_us (the device's cost per kernel of a sunk graph); give it in the "
                    "target's description, or launch \"host\"");
  }
  Target s = t;
  s.name = t.name + "-sunk";  // listed beside the part's own target (a farm, a database)
  s.launch = to_string(m);
  s.launch_us = t.sunk_launch_us;
  const Json note = t.source.value("sunk_launch_us", Json("not noted"));
  s.source["launch_us"] =
      "sunk graph: sunk_launch_us (" + (note.is_string() ? note.get<std::string>() : note.dump()) + ")";
  return s;
}

}  // namespace atvoss
