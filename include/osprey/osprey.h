// Osprey public API.
#pragma once
#include "osprey/config.h"
#include "osprey/interpreter.h"
#include "osprey/status.h"
#include "osprey/tensor.h"
#include "osprey/types.h"
