//! Experiments, result files and plots.
