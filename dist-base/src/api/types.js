// The API's contract with its transports: a request in, a response out, nothing else.
export {};
//# sourceMappingURL=types.js.map