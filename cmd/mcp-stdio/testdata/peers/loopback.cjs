// Preloaded (node --require) into the npm servers the end-to-end tests
// run (e2e_peers_test.go): neither supergateway 4.0.0 nor
// server-everything has an option for the address it listens on, and
// both listen on every interface. This makes a listen that names no host
// listen on 127.0.0.1, and writes "LISTENING 127.0.0.1:PORT" on stderr
// once it does, so that the test can be given port 0 and learn the port.
'use strict';
const net = require('node:net');

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === 'object') {
    if (first.host === undefined && first.path === undefined) args[0] = { ...first, host: '127.0.0.1' };
  } else if ((typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) && typeof args[1] !== 'string') {
    args.splice(0, 1, Number(first), '127.0.0.1');
  }
  this.once('listening', () => {
    const a = this.address();
    if (a && typeof a === 'object') process.stderr.write(`LISTENING ${a.address}:${a.port}\n`);
  });
  return listen.apply(this, args);
};
