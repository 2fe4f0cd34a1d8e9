import t from 'tap';
import { performance } from 'node:perf_hooks';
import { TakeTurns } from '../../lib/take-turns.js';

/** Holds the event loop for `ms`, as a JSON.parse of a large body does. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

t.test('steps go one at a time, in order, each followed by a pause as long as itself', async (t) => {
  const lane = new TakeTurns();
  const steps: { who: number; start: number; end: number }[] = [];
  const step = (who: number) =>
    lane.run(() => {
      const start = performance.now();
      busy(30);
      steps.push({ who, start, end: performance.now() });
    });
  await Promise.all([step(1), step(2), step(3)]);
  t.same(steps.map((s) => s.who), [1, 2, 3], 'first come, first served');
  for (let i = 1; i < steps.length; i++) {
    const pause = steps[i].start - steps[i - 1].end;
    t.ok(pause >= 28, `the loop was left to others for ${pause.toFixed(1)} ms after a 30 ms step`);
  }
});

t.test('other work runs between steps: a small request waits at most one step', async (t) => {
  const lane = new TakeTurns();
  let stepsDone = 0;
  const ticks: number[] = [];
  let ticking = true;
  // A small request's I/O: a callback every event-loop turn, recording how many steps ran before it.
  const tick = () => {
    ticks.push(stepsDone);
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  await Promise.all([1, 2, 3, 4].map(() => lane.run(() => {
    busy(20);
    stepsDone++;
  })));
  ticking = false;
  for (let n = 1; n <= 3; n++) t.ok(ticks.filter((s) => s === n).length >= 2, `other work ran between step ${n} and the next`);
});

t.test('a step that throws still ends its turn and gives the error to its caller', async (t) => {
  const lane = new TakeTurns();
  await t.rejects(lane.run(() => {
    throw new Error('bad body');
  }), /bad body/);
  t.equal(await lane.run(() => 42), 42, 'the next step runs');
});
