#pragma once

#include <initializer_list>

#include "mlw/sweep/sweep.hpp"

namespace mlw::test {

/// A trial's metric logged at steps 1, 2, … (a sweep's learning curve, for the rules' tests).
inline TrialSeries curve(std::initializer_list<double> values) {
  TrialSeries s;
  double step = 1;
  for (double v : values) {
    s.steps.push_back(step++);
    s.values.push_back(v);
  }
  return s;
}

}  // namespace mlw::test
