// Graph passes run by the converter, in order: remove Identity/Dropout, fold constants, fold
// BatchNormalization into Conv, fuse activations, drop dead code and unused tensors.
#pragma once
#include <vector>

#include "core/graph.h"

namespace osprey::passes {

// Each pass returns how many ops it removed or rewrote.
int removeIdentities(Graph& g);
Status foldConstants(Graph& g, int* folded);
int foldBatchNormIntoConv(Graph& g);
int fuseActivations(Graph& g);
int removeDeadCode(Graph& g);
void compactTensors(Graph& g);

// Number of ops reading each tensor (graph outputs count as one reader).
std::vector<int> readerCounts(const Graph& g);
// Index of the node producing each tensor, -1 for inputs and constants.
std::vector<int> producers(const Graph& g);

}  // namespace osprey::passes
