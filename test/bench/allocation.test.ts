// The bench's heap-allocation figures come from V8's own GC trace: read here from a real one.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { gcTraceTotals } from '../../bench/allocation.js';

t.test('the totals of a real --trace-gc-nvp trace', async (t) => {
  // 400,000 arrays of 16 numbers, each dropped at once: about 64 MB allocated, nearly none kept.
  const script = 'let keep = 0; for (let i = 0; i < 400000; i++) { const a = new Array(16).fill(i); keep += a[3]; } console.log("done", keep);';
  const trace = execFileSync(process.execPath, ['--trace-gc-nvp', '-e', script], { encoding: 'utf8' });
  t.match(trace, /done/);
  const g = gcTraceTotals(trace);
  t.ok(g.scavenges > 3, `${g.scavenges} scavenges`);
  t.ok(g.allocated > 40e6 && g.allocated < 200e6, `${(g.allocated / 1e6).toFixed(1)} MB allocated`);
  t.ok(g.survived < g.allocated / 10, `${(g.survived / 1e6).toFixed(2)} MB survived`);
});

t.test('one line of each kind, other lines ignored', async (t) => {
  const text = [
    '[1:0x1]       38 ms: pause=0.7 mutator=34.8 gc=s reduce_memory=0 allocated=4596856 promoted=0 new_space_survived=451848 nodes_died_in_new=11',
    '{"msg":"request","allocated=9"}',
    '[1:0x1]      900 ms: pause=11.0 mutator=40.1 gc=mc reduce_memory=0 allocated=1000 promoted=200 new_space_survived=0',
  ].join('\n');
  t.same(gcTraceTotals(text), { allocated: 4597856, survived: 451848, promoted: 200, scavenges: 1, markCompacts: 1 });
});
