// The instruction counter's function list: callgrind_annotate's lines parsed, generated code named
// from V8's perf map, code objects under one name added up.
import t from 'tap';
import { compilingIn, costliest } from '../../bench/callgrind-functions.js';

// As `callgrind_annotate --show=Ir --inclusive=no` prints them (2 requests counted).
const annotated = `--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
400 (40.00%)  ???:Builtins_KeyedLoadIC_Megamorphic [/usr/bin/node]
300 (30.00%)  ???:0x000000000d189e00 [???]
100 (10.00%)  ???:0x000000000d189f10 [???]
 60 ( 6.00%)  ???:0x000000000e000000 [???]
 50 ( 5.00%)  ./malloc/./malloc/malloc.c:_int_malloc [/usr/lib/x86_64-linux-gnu/libc.so.6]
 40 ( 4.00%)  ???:0x000000000d18a000 [???]
`;
// Three code objects named estimateInput, two at one address (the later line wins: its code replaced
// the earlier), and one of another function; 0xe000000 is in none of them.
const perfMap = `d189e00 100 JS:~estimateInput file:///x/tokens.js:289:30
d189e00 180 JS:*estimateInput file:///x/tokens.js:289:30
d18a000 40 JS:*estimateInput file:///x/tokens.js:289:30
d300000 10 JS:*other file:///x/other.js:1:1
`;

t.test('generated code is named from the map, and one name adds up', async (t) => {
  t.same(costliest(annotated, perfMap, 2, 10), [
    { name: 'JS:*estimateInput file:///x/tokens.js:289:30', perRequest: 220 },
    { name: 'Builtins_KeyedLoadIC_Megamorphic', perRequest: 200 },
    { name: 'JIT code (not in the perf map)', perRequest: 30 },
    { name: './malloc/./malloc/malloc.c:_int_malloc', perRequest: 25 },
  ]);
});

t.test('top limits the list; without a map, addresses stay unnamed', async (t) => {
  t.same(costliest(annotated, perfMap, 2, 1), [{ name: 'JS:*estimateInput file:///x/tokens.js:289:30', perRequest: 220 }]);
  t.same(costliest(annotated, '', 1, 2), [
    { name: 'JIT code (not in the perf map)', perRequest: 500 },
    { name: 'Builtins_KeyedLoadIC_Megamorphic', perRequest: 400 },
  ]);
});

t.test("V8's compiling: its entry points' inclusive costs, not what they call", async (t) => {
  // As callgrind_annotate --show=Ir --inclusive=yes prints them: runtime entries into V8's compilers, the
  // functions they call (not added again), and a runtime function that compiles nothing.
  const inclusive = `--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
5,000 (100.0%)  ???:Builtins_CEntry_Return1_ArgvOnStack_NoBuiltinExit [/usr/bin/node]
1,500 (30.00%)  ???:v8::internal::Runtime_CompileOptimized(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]
1,499 (29.98%)  ???:v8::internal::Compiler::CompileOptimized(v8::internal::Isolate*, v8::internal::Handle<v8::internal::JSFunction>, v8::internal::ConcurrencyMode, v8::internal::CodeKind) [/usr/bin/node]
  900 (18.00%)  ???:v8::internal::compiler::GraphReducer::ReduceTop() [/usr/bin/node]
  200 ( 4.00%)  ???:v8::internal::Runtime_CompileLazy(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]
   75 ( 1.50%)  ???:v8::internal::baseline::BaselineBatchCompiler::EnqueueFunction(v8::internal::Handle<v8::internal::JSFunction>) [/usr/bin/node]
   70 ( 1.40%)  ???:v8::internal::baseline::BaselineBatchCompiler::CompileBatch(v8::internal::Handle<v8::internal::JSFunction>) [/usr/bin/node]
   50 ( 1.00%)  ???:v8::internal::Runtime_AddDictionaryProperty(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]
`;
  t.equal(compilingIn(inclusive), 1_500 + 200 + 70);
  t.equal(compilingIn(''), 0);
});
