// Writes of one turn of the event loop, made together once its I/O callbacks have run
// (setImmediate: the loop's check phase, right after the poll phase).
//
// Why: on loopback a write runs the receiver's TCP input and wakes the receiving process
// when it sleeps, and waking a process on another CPU is the dearest part of a write
// (most of the proxy's system time, measured). A proxy that writes each request to its
// peer, and each response to its client, as soon as it has it, spaces its writes by its
// own work per request, long enough for a fast peer to answer and fall asleep again
// between two of them: every write wakes it. Written together, the first write of a
// turn wakes the peer and the next ones find it running. The bytes are the same; they go
// out microseconds later, within the same turn.

/** Work queued for the end of the turn's I/O. */
export interface AfterIo {
  runAfterIo(): void;
}

const queue: AfterIo[] = [];
/** The next task of the queue to run. */
let next = 0;
let armed = false;

/** Runs `task.runAfterIo()` after the I/O callbacks of this turn of the loop. */
export function afterIo(task: AfterIo): void {
  queue.push(task);
  if (!armed) {
    armed = true;
    setImmediate(runQueue);
  }
}

function runQueue(): void {
  try {
    // Tasks queued while these run join this run.
    while (next < queue.length) queue[next++].runAfterIo();
  } finally {
    // A task that threw leaves the others to the next turn, not stuck in the queue.
    if (next < queue.length) setImmediate(runQueue);
    else {
      queue.length = 0;
      next = 0;
      armed = false;
    }
  }
}
