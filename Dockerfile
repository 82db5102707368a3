# Relay's image: every role runs from it (`relay start --role ...`).
FROM node:20-bookworm
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json .npmrc ./
# better-sqlite3 builds from source against the image's Node headers.
RUN npm ci --nodedir=/usr/local && npm cache clean --force
COPY . .
# The JavaScript build (dist/) that bin/relay.js runs: no TypeScript loader in the running service.
RUN npm run build
RUN ln -s /app/bin/relay.js /usr/local/bin/relay
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/relay.js"]
CMD ["start"]
