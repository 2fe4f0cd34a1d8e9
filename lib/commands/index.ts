// Every operator command, in the order `gateway help` lists them.
import { commands as accounts } from './accounts.js';
import { commands as keys } from './keys.js';
import { commands as credits } from './credits.js';
import { commands as routing } from './routing.js';
import { commands as requests } from './requests.js';
import { commands as db } from './db.js';
import type { Command } from './types.js';

export const operatorCommands: Command[] = [...accounts, ...keys, ...credits, ...routing, ...requests, ...db];
