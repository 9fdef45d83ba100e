export class SeqRecord {
    constructor(native, views, key, offset) {
        this.cachedSeq = -1;
        this.cachedValue = undefined;
        this.native = native;
        this.u32 = views.u32;
        this.key = key;
        this.offset = offset;
        this.seqIndex = offset / 4;
    }
    /** Number of writes published so far. Cheap enough to check on every request. */
    get generation() {
        return Atomics.load(this.u32, this.seqIndex) >>> 1;
    }
    changedSince(generation) {
        return this.generation !== generation;
    }
    /** Publishes new content; false when the zone has no room (the old content stays). */
    write(content) {
        return this.native.writeRecord(this.offset, content);
    }
    read() {
        return this.native.readRecord(this.offset);
    }
    writeJSON(value) {
        return this.write(Buffer.from(JSON.stringify(value)));
    }
    /** The record's content parsed as JSON (undefined while empty), decoded again only
     * when the record's sequence has moved since the last call. */
    readJSON() {
        const seq = Atomics.load(this.u32, this.seqIndex);
        if (seq !== this.cachedSeq) {
            const content = this.read();
            this.cachedValue = content.length ? JSON.parse(content.toString('utf8')) : undefined;
            this.cachedSeq = seq;
        }
        return this.cachedValue;
    }
}
//# sourceMappingURL=record.js.map