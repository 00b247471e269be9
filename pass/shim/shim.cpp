// pathprof's C++ shim: plugin registration and LLVM analyses only. Every decision is made in Rust
// (pass/src), every algorithm lives in pathprof-core; this file only adapts LLVM's C++ API.
#include "llvm/Analysis/BlockFrequencyInfo.h"
#include "llvm/Analysis/BranchProbabilityInfo.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ProfileSummaryInfo.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm-c/Core.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/IPO/InferFunctionAttrs.h"

#include <cstdint>

using namespace llvm;

extern "C" {
// Implemented in Rust (pass/src/entry.rs). Returns nonzero if the module was changed.
// `Point`: where the pipeline calls the pass (pass/src/entry.rs `Point`): 0 pipeline start, 1 the full-LTO link
// pipeline (whole program), 2 OptimizerLast (after the IR optimiser, mode icache), 3 `opt -passes=pathprof`.
int pathprof_instrument_module(LLVMModuleRef M, void *FAM, int Point);
// Implemented in Rust: whether the pass works on modules at `Point` in this compile's configuration.
int pathprof_acts_at(int Point);
// Implemented in Rust (pass/src/entry.rs): promotion after inlining of one function; nonzero if it changed.
int pathprof_promote_after_inlining(LLVMValueRef F);
}

namespace {
// Mode icache: the pass builder of the compile being instrumented at OptimizerLast (it holds clang's
// TargetMachine, which codegen's IR passes need), and whether codegen optimises; set only while the pass runs
// there (see pathprof_shim_predict_isel_blocks). Per thread: a linker may run several pipelines at once.
thread_local PassBuilder *IselPB = nullptr;
thread_local bool IselOptimises = false;
// Drops the machine the prediction made for the module (defined with it, below).
void resetIselTargetMachine();

struct PathprofPass : PassInfoMixin<PathprofPass> {
  int Point = 0;
  PassBuilder *PB = nullptr;
  bool Optimises = false;
  explicit PathprofPass(int Point, PassBuilder *PB = nullptr, bool Optimises = false)
      : Point(Point), PB(PB), Optimises(Optimises) {}
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM) {
    // Every point but one per configuration leaves the module alone, and does nothing else either.
    if (!pathprof_acts_at(Point))
      return PreservedAnalyses::all();
    // Library functions' attributes (nounwind, willreturn, ...) from TargetLibraryInfo, exactly as the
    // optimisation pipeline infers them right after this point: they tell the pass which calls cannot leave
    // a frame abnormally. Only declarations are touched.
    InferFunctionAttrsPass().run(M, MAM);
    auto &FAM = MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
    if (PB) {
      // CodeGenPrepare reads the profile summary from the module analyses' cache.
      MAM.getResult<ProfileSummaryAnalysis>(M);
      IselPB = PB;
      IselOptimises = Optimises;
    }
    int Changed = pathprof_instrument_module(wrap(&M), &FAM, Point);
    IselPB = nullptr;
    resetIselTargetMachine();
    if (Changed) {
      // After the optimiser no inliner runs: the trace helpers (alwaysinline) are inlined here, as the
      // pipeline's AlwaysInliner does for code instrumented earlier.
      if (Point == 2)
        AlwaysInlinerPass().run(M, MAM);
      return PreservedAnalyses::none();
    }
    return PreservedAnalyses::all();
  }
  // Run at -O0 and on optnone functions too: a profiler that silently skips them would be wrong.
  static bool isRequired() { return true; }
};
// Counter promotion once more after the inliner moved callees' counter updates into their callers' loops
// (pass/src/promote.rs `promote_after_inlining`).
// Whether `P` is a fixed counter of a module's counter array (`__pathprof_counters`, ThinLTO-renamed copies too):
// the global, a constant GEP into it, or `select`s between such (SimplifyCFG's merge of a callee's updates).
bool isFixedCounter(const Value *P, int Depth = 0) {
  P = P->stripPointerCasts();
  if (const auto *S = dyn_cast<SelectInst>(P))
    return Depth < 3 && isFixedCounter(S->getTrueValue(), Depth + 1) &&
           isFixedCounter(S->getFalseValue(), Depth + 1);
  if (const auto *GEP = dyn_cast<GEPOperator>(P)) {
    if (!GEP->hasAllConstantIndices())
      return false;
    P = GEP->getPointerOperand()->stripPointerCasts();
  }
  const auto *G = dyn_cast<GlobalVariable>(P);
  return G && G->getName().starts_with("__pathprof_counters");
}

// Whether a call may leave its frame other than by returning, by its attributes: the same answer as the Rust
// side's CallFacts::from_attributes (pass/src/cfg_build.rs) for the calls a loop can hold.
bool mayLeave(const CallBase &CB) {
  if (CB.isInlineAsm())
    return false;
  if (CB.hasFnAttr(Attribute::ReturnsTwice))
    return true;
  if (const Function *F = CB.getCalledFunction()) {
    switch (F->getIntrinsicID()) {
    case Intrinsic::not_intrinsic:
      break;
    case Intrinsic::trap:
    case Intrinsic::debugtrap:
    case Intrinsic::ubsantrap:
    case Intrinsic::coro_resume:
    case Intrinsic::coro_destroy:
    case Intrinsic::eh_sjlj_longjmp:
      return true;
    default:
      return false;
    }
    if (F->hasFnAttribute("pathprof.returns"))
      return false;
  }
  return !(CB.doesNotThrow() && CB.willReturn());
}

// A cheap necessary condition for promotion after inlining to find anything in `F`: a store or atomic add at a
// fixed counter in a loop whose own blocks hold no call that may leave (an enclosing loop holds those blocks
// too). Rust decides (pass/src/promote.rs); this only spares it the functions where it would find nothing, at
// each of the pipeline's peephole points.
bool mayPromote(Function &F, FunctionAnalysisManager &FAM) {
  auto &LI = FAM.getResult<LoopAnalysis>(F);
  if (LI.empty())
    return false;
  SmallPtrSet<const Loop *, 8> Blocked, Candidates;
  for (BasicBlock &BB : F) {
    const Loop *L = LI.getLoopFor(&BB);
    if (!L)
      continue;
    for (const Instruction &I : BB) {
      const Value *P = nullptr;
      if (const auto *S = dyn_cast<StoreInst>(&I))
        P = S->getPointerOperand();
      else if (const auto *A = dyn_cast<AtomicRMWInst>(&I))
        P = A->getPointerOperand();
      else if (const auto *CB = dyn_cast<CallBase>(&I); CB && mayLeave(*CB))
        for (const Loop *Outer = L; Outer; Outer = Outer->getParentLoop())
          Blocked.insert(Outer);
      if (P && isFixedCounter(P))
        Candidates.insert(L);
    }
  }
  for (const Loop *L : Candidates)
    if (!Blocked.contains(L))
      return true;
  return false;
}

struct PathprofPromotionPass : PassInfoMixin<PathprofPromotionPass> {
  PreservedAnalyses run(Function &F, FunctionAnalysisManager &FAM) {
    if (F.isDeclaration() || !mayPromote(F, FAM))
      return PreservedAnalyses::all();
    return pathprof_promote_after_inlining(wrap(&F)) ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }
};
} // namespace

extern "C" {

// Edge frequencies from LLVM's BlockFrequencyInfo x BranchProbabilityInfo, for every block in function order
// and every terminator successor in successor order (parallel switch edges each get their own probability).
// Writes at most `cap` values into `out`; returns how many the function needs.
size_t pathprof_shim_edge_freqs(void *FAMp, LLVMValueRef Fn, uint64_t *out, size_t cap) {
  auto &FAM = *static_cast<FunctionAnalysisManager *>(FAMp);
  Function &F = *unwrap<Function>(Fn);
  auto &BFI = FAM.getResult<BlockFrequencyAnalysis>(F);
  auto &BPI = FAM.getResult<BranchProbabilityAnalysis>(F);
  size_t n = 0;
  for (BasicBlock &BB : F) {
    uint64_t freq = BFI.getBlockFreq(&BB).getFrequency();
    const Instruction *T = BB.getTerminator();
    unsigned succs = T ? T->getNumSuccessors() : 0;
    for (unsigned i = 0; i < succs; ++i) {
      if (n < cap)
        out[n] = BPI.getEdgeProbability(&BB, i).scale(freq);
      ++n;
    }
  }
  return n;
}

// Block frequencies in function order (for edges into EXIT, whose weight is their block's frequency).
size_t pathprof_shim_block_freqs(void *FAMp, LLVMValueRef Fn, uint64_t *out, size_t cap) {
  auto &FAM = *static_cast<FunctionAnalysisManager *>(FAMp);
  Function &F = *unwrap<Function>(Fn);
  auto &BFI = FAM.getResult<BlockFrequencyAnalysis>(F);
  size_t n = 0;
  for (BasicBlock &BB : F) {
    if (n < cap)
      out[n] = BFI.getBlockFreq(&BB).getFrequency();
    ++n;
  }
  return n;
}

// The source-level name of a function (DISubprogram name, demangled for C++ by the front end); null if none.
const char *pathprof_shim_subprogram_name(LLVMValueRef Fn, size_t *len) {
  Function &F = *unwrap<Function>(Fn);
  if (DISubprogram *SP = F.getSubprogram()) {
    StringRef N = SP->getName();
    *len = N.size();
    return N.data();
  }
  *len = 0;
  return nullptr;
}

// Reports a configuration error through the compiler's own diagnostics (one line, non-zero exit, no crash).
void pathprof_shim_emit_error(LLVMModuleRef M, const char *msg) {
  unwrap(M)->getContext().emitError(msg);
}

size_t pathprof_shim_plugin_info_size(void) { return sizeof(PassPluginLibraryInfo); }

// Registered through the Rust-exported llvmGetPassPluginInfo.
void pathprof_shim_register_callbacks(PassBuilder &PB) {
  // One insertion point only, so no function is ever instrumented twice (this callback also fires in the
  // -flto/-flto=thin pre-link pipelines). It sees the front end's CFG, before inlining and simplification, so
  // paths map to source and a later profile-use build can annotate the same CFG.
  PB.registerPipelineStartEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(PathprofPass(0)); });
  // Mode icache only (the pass decides from the mode and this argument): the block sequence must be the one of
  // the IR codegen receives in a plain build with the same flags, i.e. after the whole IR optimiser.
  // The pass builder lives until the pipeline has run (clang and lld build and run it in one function).
  PB.registerOptimizerLastEPCallback([&PB](ModulePassManager &MPM, OptimizationLevel Level) {
    MPM.addPass(PathprofPass(2, &PB, Level != OptimizationLevel::O0));
  });
  // Whole-program mode (PATHPROF_LTO=1, the wrapper's --pathprof-lto): compiles leave modules alone and lld's
  // full-LTO pipeline instruments the merged module once (the pass decides from the flag and this argument).
  PB.registerFullLinkTimeOptimizationEarlyEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(PathprofPass(1)); });
  // Promotion after inlining: the peephole callback runs in the function simplification pipeline right after
  // the inliner's first clean-up (and again later, when there is nothing left to do), before the loop passes.
  PB.registerPeepholeEPCallback([](FunctionPassManager &FPM, OptimizationLevel Level) {
    if (Level != OptimizationLevel::O0)
      FPM.addPass(PathprofPromotionPass());
  });
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
        if (Name == "pathprof") {
          MPM.addPass(PathprofPass(3));
          return true;
        }
        return false;
      });
}

} // extern "C"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Dominators.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/PromoteMemToReg.h"
#include <vector>

extern "C" {
// mem2reg on `N` allocas of one function (promotion after inlining, pass/src/promote.rs): the simplification
// pipeline's SROA has run by then, so the slots would otherwise stay in memory.
void pathprof_shim_promote_to_registers(LLVMValueRef *Allocas, size_t N) {
  std::vector<AllocaInst *> Slots;
  for (size_t I = 0; I < N; ++I)
    Slots.push_back(unwrap<AllocaInst>(Allocas[I]));
  if (Slots.empty())
    return;
  DominatorTree DT(*Slots.front()->getFunction());
  PromoteMemToReg(Slots, DT);
}

// Splits the critical edge `Term`→successor `Succ` with LLVM's own utility, which keeps PHIs right for parallel
// edges (only this edge's PHI entry moves to the new block). Returns the new block, or null if LLVM refuses.
LLVMBasicBlockRef pathprof_shim_split_edge(LLVMValueRef Term, unsigned Succ) {
  Instruction *TI = unwrap<Instruction>(Term);
  CriticalEdgeSplittingOptions Opts;
  return wrap(SplitCriticalEdge(TI, Succ, Opts));
}

// Splits the block of `Inst` right after it: `Inst` then ends its block with an unconditional branch to the
// new block (Melski-Reps call-site shape: call block -> return-site block). Returns the new block.
LLVMBasicBlockRef pathprof_shim_split_after(LLVMValueRef Inst) {
  Instruction *I = unwrap<Instruction>(Inst);
  return wrap(I->getParent()->splitBasicBlock(std::next(I->getIterator()), "pathprof.ret"));
}

// Guards code by `Cond`: splits before `Before` and returns the terminator of a new block that runs only when
// `Cond` is true (then falls through to `Before`).
LLVMValueRef pathprof_shim_if_then(LLVMValueRef Cond, LLVMValueRef Before) {
  Instruction *I = unwrap<Instruction>(Before);
  return wrap(SplitBlockAndInsertIfThen(unwrap(Cond), I->getIterator(), false));
}

// Splits before `Before` into `if (Cond) ... else ...`, both new blocks falling through to `Before`; returns
// their terminators (the C API has no SplitBlockAndInsertIfThenElse).
void pathprof_shim_if_then_else(LLVMValueRef Cond, LLVMValueRef Before, LLVMValueRef *Then, LLVMValueRef *Else) {
  Instruction *ThenTerm = nullptr, *ElseTerm = nullptr;
  SplitBlockAndInsertIfThenElse(unwrap(Cond), unwrap<Instruction>(Before)->getIterator(), &ThenTerm, &ElseTerm);
  *Then = wrap(ThenTerm);
  *Else = wrap(ElseTerm);
}

// Drops the repeated destinations of an `indirectbr` (clang lists a label once per `&&label` taken), keeping the
// first occurrences in order, as SimplifyCFG would later: the same transfers, one CFG edge per target, so every
// PHI the pass builds has one entry per predecessor edge. Returns how many were dropped.
unsigned pathprof_shim_drop_repeated_destinations(LLVMValueRef Term) {
  auto *IBI = dyn_cast<IndirectBrInst>(unwrap<Instruction>(Term));
  if (!IBI)
    return 0;
  SmallVector<BasicBlock *, 16> Distinct;
  SmallPtrSet<BasicBlock *, 16> Seen;
  unsigned Dropped = 0;
  for (BasicBlock *Dest : IBI->successors()) {
    if (Seen.insert(Dest).second)
      Distinct.push_back(Dest);
    else {
      Dest->removePredecessor(IBI->getParent(), /*KeepOneInputPHIs=*/true);
      ++Dropped;
    }
  }
  if (Dropped == 0)
    return 0;
  auto *New = IndirectBrInst::Create(IBI->getAddress(), Distinct.size(), IBI);
  for (BasicBlock *Dest : Distinct)
    New->addDestination(Dest);
  New->copyMetadata(*IBI);
  New->setDebugLoc(IBI->getDebugLoc());
  IBI->eraseFromParent();
  return Dropped;
}

// Marks a global dso_local (the C API has no setter): an executable's code then addresses it directly.
void pathprof_shim_set_dso_local(LLVMValueRef GV) { unwrap<GlobalValue>(GV)->setDSOLocal(true); }

// Like pathprof_shim_if_then, for code that almost never runs: the branch carries LLVM's "unlikely" weights, so
// block placement moves the guarded block out of the hot path.
LLVMValueRef pathprof_shim_if_then_cold(LLVMValueRef Cond, LLVMValueRef Before) {
  Instruction *I = unwrap<Instruction>(Before);
  MDNode *Weights = MDBuilder(I->getContext()).createUnlikelyBranchWeights();
  return wrap(SplitBlockAndInsertIfThen(unwrap(Cond), I->getIterator(), false, Weights));
}
}

#include "llvm/IR/ProfileSummary.h"
#include "llvm/ProfileData/InstrProf.h"
#include "llvm/ProfileData/ProfileCommon.h"

extern "C" {
// A ProfileSummary of exact counts, built function by function (counts[0] = entry count, then block
// counts, as InstrProfSummaryBuilder::addRecord expects), attached as an instrumentation-kind summary so
// ProfileSummaryInfo treats the annotated module like one built with -fprofile-use.
void *pathprof_shim_summary_new(void) {
  return new InstrProfSummaryBuilder(ProfileSummaryBuilder::DefaultCutoffs);
}
void pathprof_shim_summary_add(void *B, const uint64_t *counts, size_t n) {
  if (n == 0)
    return;
  InstrProfRecord R(std::vector<uint64_t>(counts, counts + n));
  static_cast<InstrProfSummaryBuilder *>(B)->addRecord(R);
}
void pathprof_shim_summary_finish(void *B, LLVMModuleRef M) {
  auto *Builder = static_cast<InstrProfSummaryBuilder *>(B);
  if (M) {
    Module *Mod = unwrap(M);
    Mod->setProfileSummary(Builder->getSummary()->getMD(Mod->getContext()), ProfileSummary::PSK_Instr);
  }
  delete Builder;
}
}


extern "C" {
// Whether the module's definition of a global may be replaced at link or load time by another one with
// different behaviour (weak/linkonce non-ODR linkage, or semantic interposition): LLVM's own criterion.
int pathprof_shim_is_interposable(LLVMValueRef GV) { return unwrap<GlobalValue>(GV)->isInterposable(); }

// Whether a call of this module's definition of GV is sure to run that very definition once linked and loaded:
// local linkage, or a strong external definition that resolves within the linkage unit (dso_local). ODR
// linkage (inline functions, templates) is not enough: the linker keeps one module's copy, and another module's
// copy carries other instrumentation.
int pathprof_shim_runs_own_definition(LLVMValueRef GV) {
  const GlobalValue *G = unwrap<GlobalValue>(GV);
  return G->hasLocalLinkage() || (G->hasExternalLinkage() && G->isDSOLocal());
}
}

#include "llvm/IR/DebugInfo.h"
#include "llvm/IR/InstrTypes.h"

extern "C" {
// What a call promises (executable slicing, pass/src/slice_graph.rs): bit 0 it only reads memory, bit 1 it
// touches no memory, bit 2 it returns (willreturn), bit 3 it never returns (noreturn). The C API cannot decode
// `memory(...)` attributes.
int pathprof_shim_call_effects(LLVMValueRef Call) {
  const CallBase *CB = unwrap<CallBase>(Call);
  return (CB->onlyReadsMemory() ? 1 : 0) | (CB->doesNotAccessMemory() ? 2 : 0) |
         (CB->hasFnAttr(Attribute::WillReturn) ? 4 : 0) | (CB->doesNotReturn() ? 8 : 0);
}

// The name of the source variable a `dbg.declare` (record or intrinsic) says lives at `Alloca`; null if none.
const char *pathprof_shim_declared_variable(LLVMValueRef Alloca, size_t *Len) {
  Value *V = unwrap(Alloca);
  for (DbgVariableRecord *R : findDVRDeclares(V)) {
    StringRef N = R->getVariable()->getName();
    *Len = N.size();
    return N.data();
  }
  for (DbgDeclareInst *D : findDbgDeclares(V)) {
    StringRef N = D->getVariable()->getName();
    *Len = N.size();
    return N.data();
  }
  *Len = 0;
  return nullptr;
}
}

#include "llvm/Transforms/Utils/Cloning.h"

extern "C" {
// A copy of F in its module (trace mode's marker-free copies of straight-line leaves, pass/src/trace_mode.rs):
// internal linkage, named NAME, its own debug-info subprogram (CloneFunction duplicates it within the module, so
// the verifier's one-function-per-subprogram rule holds). Made before F is instrumented.
LLVMValueRef pathprof_shim_clone_function(LLVMValueRef F, const char *Name) {
  Function *Fn = unwrap<Function>(F);
  ValueToValueMapTy VMap;
  Function *Copy = CloneFunction(Fn, VMap);
  Copy->setName(Name);
  Copy->setLinkage(GlobalValue::InternalLinkage);
  Copy->setVisibility(GlobalValue::DefaultVisibility);
  Copy->setDLLStorageClass(GlobalValue::DefaultStorageClass);
  Copy->setComdat(nullptr);
  Copy->setDSOLocal(true);
  return wrap(Copy);
}
}

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/CodeGen/UnreachableBlockElim.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/ValueHandle.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Scalar.h"
#include "llvm/Transforms/Utils.h"
#include <memory>
#include <unordered_map>

namespace {
// Codegen runs LoopStrengthReduce in the legacy pass manager, on loops not in LCSSA form; the new pass manager's
// loop adaptor puts them in LCSSA form first, and LSR then rewrites some exit values without the block the
// legacy run adds (zlib's inflate_table). So the prediction runs the legacy pass, whose target information
// needs a TargetMachine: one made from the module's triple, relocation and code model (clang's own is out of
// reach; each function's target-cpu and target-features attributes pick its subtarget either way).
std::unique_ptr<TargetMachine> legacyTargetMachine(const Module &M) {
  std::string Error;
  const Target *T = TargetRegistry::lookupTarget(M.getTargetTriple(), Error);
  if (!T)
    return nullptr;
  std::optional<Reloc::Model> RM = M.getPICLevel() != PICLevel::NotPIC ? Reloc::PIC_ : Reloc::Static;
  return std::unique_ptr<TargetMachine>(T->createTargetMachine(M.getTargetTriple(), "", "", TargetOptions(), RM,
                                                               M.getCodeModel(), CodeGenOptLevel::Default));
}

// The module's machine for the legacy pass, made at its first use while the pass runs at OptimizerLast.
thread_local std::unique_ptr<TargetMachine> IselTM;
thread_local const Module *IselTMModule = nullptr;

void resetIselTargetMachine() {
  IselTM.reset();
  IselTMModule = nullptr;
}

// Runs codegen's loop strength reduction on F as codegen does (legacy pass manager); false if it cannot.
bool runLegacyLSR(Function &F) {
  if (IselTMModule != F.getParent()) {
    IselTM = legacyTargetMachine(*F.getParent());
    IselTMModule = F.getParent();
  }
  TargetMachine *TM = IselTM.get();
  if (!TM)
    return false;
  legacy::FunctionPassManager LFPM(F.getParent());
  LFPM.add(createTargetTransformInfoWrapperPass(TM->getTargetIRAnalysis()));
  LFPM.add(createCanonicalizeFreezeInLoopsPass());
  LFPM.add(createLoopStrengthReducePass());
  LFPM.doInitialization();
  LFPM.run(F);
  LFPM.doFinalization();
  return true;
}
} // namespace

extern "C" {
// Mode icache: the blocks instruction selection will number, in its order, for F as it stands now (the IR a
// plain build with the same flags hands to codegen). Codegen's IR passes (LoopStrengthReduce's loop
// canonicalisation, CodeGenPrepare, memcmp expansion, ...) insert and remove blocks before instruction selection
// gives each block its `.llvm_bb_addr_map` id, so the ids of a function's IR blocks shift. This runs those of
// the passes that can change a function's blocks, as X86's codegen pipeline orders them, on a copy of F, and
// writes per resulting block the block of F it is (a block merged into another or deleted is not listed), or
// null for a block the passes created. Returns the number of blocks, or -1 when no prediction can be made (not
// at OptimizerLast, a pipeline LLVM does not know, no target for the legacy pass, more than Cap blocks). pathprof icache checks the prediction
// against the binary like any other mapping; it is a candidate, not a fact.
long pathprof_shim_predict_isel_blocks(LLVMValueRef F, void *FAMp, LLVMBasicBlockRef *Out, size_t Cap) {
  Function *Fn = unwrap<Function>(F);
  if (!IselPB || !FAMp || Fn->isDeclaration())
    return -1;
  auto &FAM = *static_cast<FunctionAnalysisManager *>(FAMp);
  // TargetPassConfig::addIRPasses, addCodeGenPrepare, addPassesToHandleExceptions and addISelPrepare for X86,
  // without the passes that never change blocks: First; at -O2 loop strength reduction (runLegacyLSR); Before;
  // LLVM's unreachable-block elimination, which has no pipeline name; After.
  const char *First = "expand-large-div-rem,expand-large-fp-convert,atomic-expand";
  const char *Before = IselOptimises ? "mergeicmps,expand-memcmp,lower-constant-intrinsics"
                                     : "lower-constant-intrinsics";
  const char *After = IselOptimises ? "partially-inline-libcalls,scalarize-masked-mem-intrin,indirectbr-expand,"
                                      "codegenprepare,dwarf-eh-prepare,safe-stack,stack-protector"
                                    : "scalarize-masked-mem-intrin,indirectbr-expand,dwarf-eh-prepare,safe-stack,"
                                      "stack-protector";
  FunctionPassManager FirstFPM, FPM;
  if (Error E = IselPB->parsePassPipeline(FirstFPM, First)) {
    consumeError(std::move(E));
    return -1;
  }
  if (Error E = IselPB->parsePassPipeline(FPM, Before)) {
    consumeError(std::move(E));
    return -1;
  }
  FPM.addPass(UnreachableBlockElimPass());
  if (Error E = IselPB->parsePassPipeline(FPM, After)) {
    consumeError(std::move(E));
    return -1;
  }
  ValueToValueMapTy VMap;
  Function *Copy = CloneFunction(Fn, VMap);
  // WeakVH: nulled when the passes delete a block, and not moved onto the survivor when they merge one into
  // another (a WeakTrackingVH would follow that replaceAllUsesWith).
  std::vector<std::pair<WeakVH, BasicBlock *>> Copies;
  for (BasicBlock &B : *Fn)
    Copies.emplace_back(WeakVH(VMap[&B]), &B);
  FirstFPM.run(*Copy, FAM);
  bool Predicted = true;
  if (IselOptimises) {
    // The legacy pass manager computes its own analyses; the new one's of the copy are stale after it.
    FAM.clear(*Copy, Copy->getName());
    Predicted = runLegacyLSR(*Copy);
  }
  if (Predicted)
    FPM.run(*Copy, FAM);
  std::unordered_map<const Value *, BasicBlock *> Original;
  for (auto &[Handle, B] : Copies)
    if (Value *V = Handle)
      Original.emplace(V, B);
  long N = -1;
  if (Predicted && Copy->size() <= Cap) {
    N = 0;
    for (BasicBlock &B : *Copy) {
      auto It = Original.find(&B);
      Out[N++] = It == Original.end() ? nullptr : wrap(It->second);
    }
  }
  FAM.clear(*Copy, Copy->getName());
  Copy->eraseFromParent();
  return N;
}
}
