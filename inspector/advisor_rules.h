// Inside the advisor (not a public header): the helpers every rule shares and the
// rules of advisor_rules.cpp (host fallback, slices that change type, unfused Q/DQ,
// convolutions off tensor cores, opt shapes far from the run, layers below their
// roofline). advisor.cpp runs them all.
#pragma once

#include <string>
#include <vector>

#include "advisor.h"

namespace kiln::inspector::advice {

bool isConvolution(const ReportLayer& l);
// A layer that only moves data (Transpose, Shuffle, Reformat).
bool movesData(const ReportLayer& l);
std::string tensorPrecision(const ReportTensor& t);
// "1 layer runs" / "3 layers run": the count, the noun and the verb agreeing with it.
std::string counted(size_t n, const char* one, const char* many);
// The layers' summed milliseconds; -1 when any is untimed.
double sumMs(const EngineReport& report, const std::vector<size_t>& layers);
Finding finding(const EngineReport& report, const char* rule, AdviceSeverity severity,
                const std::string& message, const std::vector<size_t>& layers,
                const std::string& fix);
// Channels of a conv tensor: [N, C, ...], or the last dim when the format is HWC; -1.
int64_t channelsOf(const ReportTensor& t);

void hostFallback(const EngineReport& report, std::vector<Finding>* out);
void slicesChangingType(const EngineReport& report, std::vector<Finding>* out);
void unfusedQdq(const EngineReport& report, std::vector<Finding>* out);
void convNotOnTensorCores(const EngineReport& report, std::vector<Finding>* out);
void optShapeFar(const EngineReport& report, const AdviseOptions& options,
                 std::vector<Finding>* out);
void belowRoofline(const EngineReport& report, const AdviseOptions& options,
                   std::vector<Finding>* out);
// advisor_precision_rules.cpp
void precisionIslands(const EngineReport& report, std::vector<Finding>* out);
void weightsWiderThanCompute(const EngineReport& report, std::vector<Finding>* out);

}  // namespace kiln::inspector::advice
