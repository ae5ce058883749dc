/** The part of autocannon 8's programmatic API that the bench uses (the package ships no types). */
declare module 'autocannon' {
  export interface AutocannonRequest {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Called before each request is sent; returns the request to send. */
    setupRequest?: (request: AutocannonRequest) => AutocannonRequest;
  }

  export interface AutocannonOptions {
    url: string;
    connections?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds before a request counts as timed out. */
    timeout?: number;
    requests?: AutocannonRequest[];
  }

  export interface AutocannonResult {
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
  }

  export default function autocannon(options: AutocannonOptions): Promise<AutocannonResult>;
}
