// The names of an enum's values as one table: a name per value, in the
// enum's order, so that a value and its name are written once, side by side
// (status.cpp's error-kind rows follow the same rule). A value past the
// table (a cast from an integer) has the fallback name.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace querypilot {

template <typename Enum, size_t N>
constexpr std::string_view EnumName(const std::array<std::string_view, N>& names, Enum value,
                                    std::string_view fallback) {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : fallback;
}

// The value `name` names in `names`; nullopt for a name no value has.
template <typename Enum, size_t N>
constexpr std::optional<Enum> EnumNamed(const std::array<std::string_view, N>& names,
                                        std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace querypilot
