// The default text of fdpp calibrate: plain English of several kinds (a story, explanations,
// a dialogue, instructions, a letter, lists with numbers), written for fdpp, so that the
// attention scores it produces resemble those of ordinary prompts. A few thousand tokens
// with a Llama tokenizer; longer ones (stories260K's 512-piece vocabulary) are cut into
// sequences of the model's context by the caller.
#include "tuning/calibration.h"

namespace fdpp {

const char* builtin_calibration_text() {
  return R"TEXT(The lighthouse on the northern cape had been dark for eleven years when Mara Ellison
bought it for the price of a used car. The town council was glad to be rid of it. The stairs
were rusted, the lens was cracked, and the keeper's cottage had lost half of its roof to a
storm that people in the village still talked about in lowered voices. Mara did not mind. She
had spent twenty years repairing clocks in a city apartment, and she wanted a machine large
enough to walk inside.

On the first morning she climbed the one hundred and fourteen steps with a notebook and a
flashlight. At every landing she stopped to write down what she saw: a loose bolt, a window
frame soft with rot, a nest of dry seaweed that a gull must have carried in through a broken
pane. At the top she found the great lens, taller than she was, its glass prisms arranged in
rings like the inside of a shell. One ring had split from top to bottom. The rest caught the
grey light from the sea and bent it into a hundred small rainbows that moved across the floor
whenever the clouds shifted.

She sat down on the cold iron floor and laughed, because it was the most beautiful broken
thing she had ever owned.

The repairs took two summers. A carpenter from the village, a quiet man named Tobias who
spoke mostly about the weather, helped her replace the roof of the cottage. A retired
electrician drove up twice a week to rewire the lamp room, complaining the whole time about
the salt air and the state of the old cables. Mara ordered the replacement prism from a
workshop in another country, and when it finally arrived, packed in straw inside a wooden
crate, she carried it up the stairs herself, one careful step at a time.

The first night the light turned again, half the village came out to the cliffs to watch. The
beam swept over the water, over the fishing boats tied in the harbour, over the roofs and the
church and the long empty beach, and then back out to sea. Children counted the seconds
between flashes. An old fisherman who had not spoken to Mara since she arrived walked up the
path in the dark and shook her hand without a word.

Rivers shape the land more patiently than any other force we can easily observe. A river
carries sand and gravel from the mountains toward the sea, and in doing so it wears down the
ground it passes through. Where the water moves quickly, it cuts a narrow valley with steep
sides. Where it slows, usually on flat ground near the coast, it drops the material it was
carrying and begins to wander. A slow river bends back and forth across its plain, and over
many years each bend grows wider, because water on the outside of a curve moves faster and
eats into the bank while water on the inside moves slowly and builds a bar of sand.

Eventually two bends may come so close together that the river breaks through the narrow
neck of land between them during a flood. The old loop is then cut off and becomes a quiet
curved lake, which geographers call an oxbow lake. Over decades it fills with mud and plants
and turns into a marsh, and later into a meadow, so that the only trace of the former river
is a curved line of damp ground that farmers learn to avoid with their machines.

People have always settled near rivers, because rivers provide water for drinking and
farming, fish to eat, and a road for boats. But living beside a river means accepting that it
will sometimes rise. Many old towns were built on the highest ground available, a little
back from the water, and their oldest buildings still stand while newer houses on the flat
land below are flooded every few years. Engineers can build walls and channels to hold a
river in place, but a river held too tightly often floods more violently downstream, where
the water that could not spread out arrives all at once.

"Do you really think it will rain?" asked Jonah, looking at the sky over the harbour.

"I think it has already decided to," said his grandmother. "Look at the gulls. They are all
standing on the roofs, facing the same way. When they stop flying, the wind is about to
change."

"That sounds like something people say."

"People say it because it is usually true. You can check it yourself. Write down what the
gulls are doing every morning for a month, and write down the weather every afternoon. Then
count how often the two agree."

"That is a lot of writing for a few birds."

"Most things worth knowing take a lot of writing. Your grandfather kept a notebook of the
tides for forty years. He could tell you, without looking at a table, when the water would
be low enough to walk out to the rocks."

"Did he ever get it wrong?"

"Twice. The first time he lost a boot. The second time he lost his pride, because the whole
village watched him wade back to shore holding his shoes above his head. After that he
checked the table anyway, every single morning, and he never told anyone."

Jonah laughed, and the first drops of rain began to fall on the stones of the pier.

How to bake a simple loaf of bread. You will need five hundred grams of flour, three hundred
and fifty grams of warm water, ten grams of salt, and seven grams of dried yeast. First, mix
the yeast into the water and let it stand for five minutes. Then put the flour and the salt
into a large bowl, pour in the water, and stir with a wooden spoon until no dry flour
remains. The dough will be sticky and rough. Cover the bowl with a cloth and leave it for
half an hour.

After the rest, wet your hands and fold the dough over itself several times, turning the bowl
a quarter turn between folds. You will feel it become smoother and more elastic. Cover it
again and let it rise in a warm place until it has roughly doubled in size, which usually
takes between one and two hours depending on the temperature of your kitchen.

Next, tip the dough onto a floured table and shape it gently into a round loaf without
pressing out all of the air. Place it on a tray lined with baking paper, cover it, and let it
rise a second time for about forty minutes. Meanwhile, heat the oven to two hundred and
thirty degrees Celsius. Just before baking, cut a shallow cross into the top of the loaf with
a sharp knife. Bake for thirty five to forty minutes, until the crust is deep brown and the
bottom of the loaf sounds hollow when you tap it. Let it cool on a rack for at least an hour
before slicing, because the inside is still cooking as the steam escapes.

A computer program is a list of instructions that a machine follows exactly, one after
another, without understanding what any of them are for. This is both the power and the
difficulty of programming. A program can add a million numbers in the time it takes you to
blink, but it will also repeat the same mistake a million times without noticing that
anything is wrong. For this reason, programmers spend much of their time not writing new
instructions but checking old ones: running small examples, comparing the results with
answers worked out by hand, and asking what would happen if the input were empty, or very
large, or slightly different from what was expected.

Numbers inside a computer are stored with a fixed number of binary digits, so they cannot
represent every value exactly. A number that is too large for its format may become infinite,
and a number that is too small may become zero. Careful programs keep their intermediate
results within a comfortable range, for example by subtracting a large common value before
computing an exponential and adding it back afterwards. The answer is the same in exact
arithmetic, but the rounded version stays accurate, because no step ever reaches the edges of
what the format can hold.

Memory is another limit. Modern processors can perform arithmetic far faster than they can
fetch data from main memory, so the speed of many programs depends less on how many
calculations they perform than on how many bytes they must read. A well designed program
arranges its data so that values used together are stored together, reads each value as few
times as possible, and keeps the most frequently used values close to the processor, in small
and fast caches.

Dear Ruth,

Thank you for your letter and for the photographs of the garden. I cannot believe how tall the
sunflowers have grown since spring. When I visited in April they were no higher than my knee,
and now, if the picture is honest, they are looking over the fence at the neighbours.

Things here are quieter than usual. The school closed for the summer two weeks ago, and the
street outside my window is empty most afternoons except for a delivery van and an old dog
who sleeps in the shade of the bakery. I have finally started painting the spare room, a pale
green that looked much brighter on the little card at the shop. It will do. The window faces
east, so the morning light will make it warmer than it looks now.

I have been reading the book you recommended, the one about the family of sailors. I am only
halfway through, but I already know I will be sorry when it ends. I read a chapter every
evening on the balcony while the swifts race around the rooftops.

Please give my love to Daniel and the children. Tell Anna that I am still practising the card
trick she taught me and that I will show her when I come in September. I have nearly got it,
although the cat has seen it so many times that she no longer looks surprised.

With love,
Elizabeth

A short list of facts about the planets of our solar system. Mercury is the smallest planet
and the closest to the sun, and a year there lasts only eighty eight days. Venus is almost
the same size as the Earth, but its thick atmosphere traps so much heat that its surface is
hotter than that of Mercury. The Earth is the only planet known to have liquid water on its
surface and life of any kind. Mars is about half the width of the Earth and has the tallest
volcano in the solar system, a mountain nearly three times the height of Everest. Jupiter is
so large that more than a thousand Earths could fit inside it. Saturn is famous for its rings,
which are made of countless pieces of ice and rock, some as small as grains of sand and some
as large as houses. Uranus rotates on its side, probably because of a collision long ago.
Neptune has the strongest winds measured on any planet, with speeds of more than two thousand
kilometres per hour.

In the market square on Saturday mornings, the stalls open at seven. The fruit seller arrives
first, stacking apples and pears in careful pyramids, and then the cheese maker, the man who
sells honey in jars of every size, and the woman with the flowers, who always seems to have
more buckets than space. By nine the square is crowded. People meet friends they have not
seen all week, children beg for pastries, and dogs sniff at the fish counter with great
interest until someone shoos them away.

The prices are written on small chalkboards: apples at two euros a kilo, eggs at three
euros for a dozen, a loaf of rye bread for four euros fifty. Regular customers know which
stalls will give them an extra handful of cherries and which ones will round the price down
when they are counting coins. Tourists take photographs of the old clock on the town hall,
which has been five minutes slow for as long as anyone can remember. The town once paid a
specialist to fix it, and for a week it kept perfect time, and then it slipped back to five
minutes slow, as if it preferred things that way.

At noon the bells ring, the stalls begin to close, and the square empties as quickly as it
filled. Only the pigeons remain, walking between the cobblestones in search of crumbs, and
the sweeper with his wide broom, who whistles the same tune every week.

There is an old puzzle about a farmer who must carry a wolf, a goat, and a cabbage across a
river in a boat that holds only the farmer and one other thing. If the wolf is left alone
with the goat, the wolf eats the goat. If the goat is left alone with the cabbage, the goat
eats the cabbage. The solution begins with the farmer taking the goat across, because the
wolf will not eat the cabbage. He returns alone and takes the wolf across, but he brings the
goat back with him. He leaves the goat on the first bank, takes the cabbage across to the
wolf, and returns alone one last time to fetch the goat. The surprising step is the one where
something that has already crossed is carried back again, and many puzzles, and many real
problems, are solved in the same way, by accepting a step that seems to undo progress.

Scientists measure the age of ancient objects in several ways. Trees add one ring of wood
every year, so counting the rings of a fallen trunk gives its age, and matching patterns of
thick and thin rings between old and new timber can carry the count back thousands of years.
Layers of ice in the polar caps record the snow of each winter, together with tiny bubbles of
the air that was trapped when the snow was pressed into ice. Certain kinds of atoms change
into other kinds at a steady rate, and by measuring how much of the original kind remains in
a sample, scientists can estimate how long ago the sample formed. Each method has its own
range and its own sources of error, and the most reliable dates are those on which several
independent methods agree.

When Mara finally wrote the history of the lighthouse for the village newsletter, she began
with a list of its keepers, copied from a ledger she had found in a drawer of the cottage. The
first keeper had arrived in a year when the harbour still sent ships to three continents. The
last one had left with a suitcase and a cat on the morning the light was switched off. In
between there were forty names, some of them written in careful copperplate, some in a hurried
pencil, and one, near the middle, surrounded by small drawings of birds.

She never learned who had drawn them. But she kept the ledger on the table in the lamp room,
open at that page, and every night before she climbed down the stairs she added one line of
her own: the date, the weather, the state of the sea, and the words that every keeper before
her had written at the end of a watch. Light burning. All well.
)TEXT";
}

}  // namespace fdpp
