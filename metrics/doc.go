// Package metrics computes every figure gavel reports about a judge:
// agreement (observed agreement, Scott's pi, Cohen's kappa, Bennett's S,
// Krippendorff's alpha at four levels, Fleiss' kappa), classification
// against a reference label (confusion matrix, per-class precision, recall
// and F1, MCC, with invalid predictions counted apart), correlation of
// scores (Pearson, Spearman, Kendall tau-b, MAE, exact and within-one
// accuracy), percentile bootstrap intervals over items or whole groups,
// paired intervals of differences, and threshold sweeps.
//
// It does no I/O. A figure that cannot be computed (one category only, no
// pairable values, zero variance) is a Value whose Undefined field says
// why; no function here returns NaN.
package metrics
